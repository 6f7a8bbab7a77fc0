// Naming rules for the entities we create, and the forwarder naming decision of DESIGN.md §3.
import { nameProblem } from '../contract/catalogSchema.ts';

export class TopologyError extends Error {
  override readonly name = 'TopologyError';
}

/**
 * Forwarder subscription name on producer X's topic: the event type id when it has one consumer (the
 * specification's naming), `X-{C}` per consumer when it has several.
 */
export function forwarderName(eventTypeId: string, consumerId: string, consumerCount: number): string {
  return consumerCount === 1 ? eventTypeId : `${eventTypeId}-${consumerId}`;
}

/** Throws a TopologyError naming the entity, the name and what is wrong with it. */
export function assertValidName(what: string, name: string, hint?: string): void {
  const problem = nameProblem(name);
  if (problem) throw new TopologyError(`${what} name '${name}' ${problem}${hint ? `: ${hint}` : ''}`);
}
