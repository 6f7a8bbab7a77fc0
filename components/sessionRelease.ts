// What happens to a session's parked events when an operator command releases the session. Resubmit and Skip both
// release it (docs/sdk.md: a successful retry and a skip release the session the same way), so their confirmations
// say the same thing, from this one function.
import { countOf } from './format.tsx';

/** `session X is released and …` - the tail, by how many events are parked behind the one being settled. */
export function parkedFollowText(parked: number): string {
  if (parked === 0) return 'nothing is parked behind it';
  return `its ${countOf(parked, 'parked event')} ${parked === 1 ? 'follows' : 'follow'}`;
}
