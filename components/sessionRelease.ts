// What happens to a session's parked events when an operator command releases the session. Resubmit and Skip both
// release it (docs/sdk.md: a successful retry and a skip release the session the same way), so their confirmations
// say the same thing, from this one function.
import { countOf } from './format.tsx';

/** `session X is released and …` - the tail, by how many events are parked behind the one being settled. */
export function parkedFollowText(parked: number): string {
  if (parked === 0) return 'nothing is parked behind it';
  return `its ${countOf(parked, 'parked event')} ${parked === 1 ? 'follows' : 'follow'}`;
}

/**
 * The parked panel's line after a command that releases the session (resubmit, skip, handoff completion): how many
 * of the events parked when it was sent have left the parked set since, e.g. "3 parked events released after the
 * resubmit". Null while none has (the session is not released yet, or nothing was parked).
 */
export function releasedText(parkedWhenSent: number, parkedNow: number, command: string): string | null {
  const released = parkedWhenSent - parkedNow;
  if (released <= 0) return null;
  const still = parkedNow > 0 ? `; ${parkedNow} still parked` : '';
  return `${countOf(released, 'parked event')} released after the ${command}${still}.`;
}
