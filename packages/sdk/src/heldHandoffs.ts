// The handoffs an agent loop (AgentClient.serve) holds out of its receives for a while, and the `exclude` list of
// its receives built from them and the handoffs in hand. Held: a handoff whose settlement the console refused for
// good (REFUSAL_HOLD_MS), and one its work left pending by answering null (LEAVE_HOLD_MS). Without the hold such a
// handoff left the hand, was handed out again by the next receive (the console hands out the oldest pending first)
// and worked again - refused again and again, and for a null at once, in a busy loop against the console.
// The console takes at most MAX_EXCLUDE ids in one receive, so the oldest holds give way first; the handoffs in
// hand never do (one handed out twice at once would be worked twice). Holds that no longer fit are still
// remembered (up to MAX_REMEMBERED), so that the loop knows a handoff handed out while held for what it is.

/** The console's limit on `exclude` (server/agent/schemas.ts `receiveQuery`). */
export const MAX_EXCLUDE = 100;

/**
 * How long a refusal keeps its handoff out of the loop's receives. The console's exclude matches an event id, so a
 * refusal held for good would also keep out the event's next handoff (after an operator resubmits it and the handler
 * hands it off again) until the process restarts; held for a while, a handoff refused for good is worked again at
 * most once per this time instead of in a tight loop.
 */
export const REFUSAL_HOLD_MS = 10 * 60_000;

/**
 * How long a handoff the work left pending (answered null: not now, or not this agent's) is kept out of the loop's
 * receives unless `serve`'s `leaveHoldMs` says otherwise: long enough that the loop goes on to the next one instead of being handed the same one straight back,
 * short enough that "later" is soon.
 */
export const LEAVE_HOLD_MS = 60_000;

/**
 * The shortest leave hold `serve` takes. The hold is what keeps a left handoff from being handed straight back: the
 * console hands out the oldest pending first, so once the hold is over the next receive hands it out again and the
 * work is asked again. Held for a millisecond, that is at once - a receive, the work's "not now", another receive,
 * many times a second against the console, the busy loop the hold is for. A second is the loop's own floor for
 * asking again (a failed receive's first backoff, the wait after a held handoff is handed out, the least long-poll
 * wait), and "not now" answered at most once a second per handoff is a load the console takes.
 */
export const MIN_LEAVE_HOLD_MS = 1_000;

/** Holds remembered beyond the ones an exclude can carry (the oldest are forgotten first). */
export const MAX_REMEMBERED = 1_000;

export class HeldHandoffs {
  // Insertion order is hold order, oldest first: a Map keeps it, and re-adding moves an id to the end. The value is
  // when the hold ends.
  readonly #until = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Holds a handoff out for `ms` from now (as the newest hold, replacing an earlier one). */
  hold(eventId: string, ms: number): void {
    this.#until.delete(eventId);
    this.#until.set(eventId, this.#now() + ms);
    for (const oldest of this.#until.keys()) {
      if (this.#until.size <= MAX_REMEMBERED) break;
      this.#until.delete(oldest);
    }
  }

  /** Whether a handoff is held (it may have been handed out all the same: its hold did not fit in the exclude). */
  isHeld(eventId: string): boolean {
    this.#expire();
    return this.#until.has(eventId);
  }

  /** The ids in hand, then the newest held ones that still fit within MAX_EXCLUDE. */
  exclude(inHand: Iterable<string>): string[] {
    const inHandIds = [...inHand];
    const inHandSet = new Set(inHandIds);
    this.#expire();
    const held = [...this.#until.keys()].filter((id) => !inHandSet.has(id));
    const room = Math.max(0, MAX_EXCLUDE - inHandIds.length);
    return [...inHandIds, ...held.slice(Math.max(0, held.length - room))];
  }

  #expire(): void {
    const now = this.#now();
    for (const [id, until] of this.#until) if (until <= now) this.#until.delete(id);
  }
}
