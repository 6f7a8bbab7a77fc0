// The handoffs an agent loop (AgentClient.serve) has given up on because the console refused their settlement for
// good, and the `exclude` list of its receives built from them and the handoffs in hand. Without it a refused
// handoff left the hand, was handed out again by the next receive, and was worked, and refused, again - forever.
// The console takes at most MAX_EXCLUDE ids in one receive, so the oldest refusals give way first; the handoffs in
// hand never do (one handed out twice at once would be worked twice).

/** The console's limit on `exclude` (server/agent/schemas.ts `receiveQuery`). */
export const MAX_EXCLUDE = 100;

/**
 * How long a refusal keeps its handoff out of the loop's receives. The console's exclude matches an event id, so a
 * refusal held for good would also keep out the event's next handoff (after an operator resubmits it and the handler
 * hands it off again) until the process restarts; held for a while, a handoff refused for good is worked again at
 * most once per this time instead of in a tight loop.
 */
export const REFUSAL_HOLD_MS = 10 * 60_000;

export class RefusedHandoffs {
  // Insertion order is refusal order, oldest first: a Map keeps it, and re-adding moves an id to the end. The value is
  // when it was refused.
  readonly #ids = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Remembers a refused handoff (as the newest); refusals past the limit could never be excluded and are dropped. */
  add(eventId: string): void {
    this.#ids.delete(eventId);
    this.#ids.set(eventId, this.#now());
    for (const oldest of this.#ids.keys()) {
      if (this.#ids.size <= MAX_EXCLUDE) break;
      this.#ids.delete(oldest);
    }
  }

  /** The ids in hand, then the newest refused ones (refused within REFUSAL_HOLD_MS) that still fit within MAX_EXCLUDE. */
  exclude(inHand: Iterable<string>): string[] {
    const held = [...inHand];
    const heldSet = new Set(held);
    const since = this.#now() - REFUSAL_HOLD_MS;
    for (const [id, at] of this.#ids) if (at <= since) this.#ids.delete(id);
    const refused = [...this.#ids.keys()].filter((id) => !heldSet.has(id));
    const room = Math.max(0, MAX_EXCLUDE - held.length);
    return [...held, ...refused.slice(Math.max(0, refused.length - room))];
  }
}
