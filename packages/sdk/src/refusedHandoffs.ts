// The handoffs an agent loop (AgentClient.serve) has given up on because the console refused their settlement for
// good, and the `exclude` list of its receives built from them and the handoffs in hand. Without it a refused
// handoff left the hand, was handed out again by the next receive, and was worked, and refused, again - forever.
// The console takes at most MAX_EXCLUDE ids in one receive, so the oldest refusals give way first; the handoffs in
// hand never do (one handed out twice at once would be worked twice).

/** The console's limit on `exclude` (server/agent/schemas.ts `receiveQuery`). */
export const MAX_EXCLUDE = 100;

export class RefusedHandoffs {
  // Insertion order is refusal order, oldest first: a Set keeps it, and re-adding moves an id to the end.
  readonly #ids = new Set<string>();

  /** Remembers a refused handoff (as the newest); refusals past the limit could never be excluded and are dropped. */
  add(eventId: string): void {
    this.#ids.delete(eventId);
    this.#ids.add(eventId);
    for (const oldest of this.#ids) {
      if (this.#ids.size <= MAX_EXCLUDE) break;
      this.#ids.delete(oldest);
    }
  }

  /** The ids in hand, then the newest refused ones that still fit within MAX_EXCLUDE. */
  exclude(inHand: Iterable<string>): string[] {
    const held = [...inHand];
    const heldSet = new Set(held);
    const refused = [...this.#ids].filter((id) => !heldSet.has(id));
    const room = Math.max(0, MAX_EXCLUDE - held.length);
    return [...held, ...refused.slice(Math.max(0, refused.length - room))];
  }
}
