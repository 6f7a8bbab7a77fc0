// The disposition range guard on its own: which ids reach rhea's on_disposition (a wide range is narrowed, not refused).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { guardDispositionRanges } from './disposition-range.ts';
import type { DispositionFields, DispositionSide } from './disposition-range.ts';

/** A side holding ids head..head+size-1 that records what rhea would have been asked to walk. */
function side(head: number | undefined, size: number) {
  const seen: DispositionFields[] = [];
  const s: DispositionSide = {
    deliveries: { size, get_head: () => (head === undefined ? undefined : { id: head }) },
    on_disposition: (fields) => void seen.push(fields),
  };
  return { s, seen };
}

/** Like rhea's performatives: the fields are getters on the prototype, not own properties. */
class Performative {
  constructor(private readonly v: { first: number; last?: number; settled: boolean; state: unknown }) {}
  get first(): number {
    return this.v.first;
  }
  get last(): number | undefined {
    return this.v.last;
  }
  get settled(): boolean {
    return this.v.settled;
  }
  get state(): unknown {
    return this.v.state;
  }
}

test('a range is walked only over the ids the session holds, with its outcome kept', () => {
  const out = side(10, 3);
  const inc = side(undefined, 0);
  guardDispositionRanges({ outgoing: out.s, incoming: inc.s });
  const state = { accepted: true };
  out.s.on_disposition(new Performative({ first: 8, last: 13, settled: true, state }));
  out.s.on_disposition(new Performative({ first: 11, settled: false, state }));
  out.s.on_disposition(new Performative({ first: 2, last: 9, settled: true, state }));
  inc.s.on_disposition(new Performative({ first: 0, last: 5, settled: true, state }));
  assert.deepEqual(out.seen, [
    { first: 10, last: 12, settled: true, state },
    { first: 11, last: 11, settled: false, state },
  ]);
  assert.deepEqual(inc.seen, []);
});

test('a range wider than the session can hold is narrowed to the held ids on either side, not refused', () => {
  const out = side(3000, 2);
  const inc = side(5, 1);
  const [empty, emptyIn] = [side(undefined, 0), side(undefined, 0)];
  guardDispositionRanges({ outgoing: out.s, incoming: inc.s });
  guardDispositionRanges({ outgoing: empty.s, incoming: emptyIn.s });
  out.s.on_disposition({ first: 0, last: 3001, settled: true });
  inc.s.on_disposition({ first: 0, last: 0xffffffff, settled: true });
  empty.s.on_disposition({ first: 0, last: 0xffffffff, settled: true });
  assert.deepEqual(out.seen, [{ first: 3000, last: 3001, settled: true, state: undefined }]);
  assert.deepEqual(inc.seen, [{ first: 5, last: 5, settled: true, state: undefined }]);
  assert.deepEqual(empty.seen, []);
});
