// Bounds the work one disposition frame can cause. rhea (lib/session.js, Outgoing/Incoming.on_disposition)
// walks every delivery id from `first` to `last`, so a 30-byte frame naming 0..0xFFFFFFFF held the event loop
// for about a minute, and every lock lapsed meanwhile. The range is handed to rhea narrowed to the ids the
// session's delivery buffer holds: the same effect (ids outside it name nothing rhea could settle), a walk of
// at most the buffer's size, and ids below the oldest held one cannot reach a wrapped buffer slot that holds
// another delivery. A wide range is not refused: AMQP lets a range cover ids already settled (a client settling
// ids 0 and 3001 in one frame), and the narrowing alone already bounds the walk.
// This is an instance-level wrapper installed on session open; rhea itself stays untouched.

export interface DispositionFields {
  first?: number;
  last?: number | null;
  settled?: boolean;
  state?: unknown;
}

/** The part of rhea's session Outgoing/Incoming objects (and their CircularBuffer) used here. */
export interface DispositionSide {
  deliveries: { size: number; get_head(): { id: number } | undefined };
  on_disposition(fields: DispositionFields): void;
}

export function guardDispositionRanges(session: {
  outgoing: DispositionSide;
  incoming: DispositionSide;
}): void {
  for (const side of [session.outgoing, session.incoming]) {
    const original = side.on_disposition.bind(side);
    side.on_disposition = (fields) => {
      const first = fields.first;
      // rhea's own reading: a missing (or zero) `last` means `first` alone.
      const last = fields.last ? fields.last : first;
      // Anything else rhea's loop does not walk at all.
      if (typeof first !== 'number' || typeof last !== 'number' || last < first) return original(fields);
      const { size } = side.deliveries;
      const head = side.deliveries.get_head();
      if (!head) return;
      const from = Math.max(first, head.id);
      const to = Math.min(last, head.id + size - 1);
      // The performative's fields are getters on its prototype (a spread would drop them): name the ones
      // rhea's on_disposition reads.
      if (from <= to) original({ first: from, last: to, settled: fields.settled, state: fields.state });
    };
  }
}
