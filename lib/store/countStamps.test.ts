// The counter stamps a buffering writer leaves on its rows (nextStamps, docs/store.md "Exact counters after a
// crash") must sum to the delta its buffer holds for the window, so a survivor's recovery applies exactly what the
// dead writer never flushed: also when another writer moved the row between two of its moves in one window. The pure
// function, then the recovery on the embedded Cosmos server with the real client.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { nextStamps } from './counters.ts';
import type { CounterBucket, CountStamp } from './schemas.ts';
import { msg, startProxiedStoreFixture, steppingClock, uniq, type ProxiedStoreFixture } from './testing/fixtures.ts';

const none = () => 0;

/** The net per-bucket delta the stamps of `owner` say, as recoverEndpoint sums them. */
function net(stamps: readonly CountStamp[] | undefined, owner: string): Partial<Record<CounterBucket, number>> {
  const out: Partial<Record<CounterBucket, number>> = {};
  for (const st of stamps ?? [])
    if (st.o === owner) {
      out[st.t] = (out[st.t] ?? 0) + 1;
      if (st.f !== null) out[st.f] = (out[st.f] ?? 0) - 1;
    }
  return Object.fromEntries(Object.entries(out).filter(([, n]) => n !== 0));
}

describe('nextStamps', () => {
  test('two moves back to back in one window extend one stamp; a move back nets to none', () => {
    const first = nextStamps(undefined, 'W1', 5, 'Pending', 'Failed', none);
    const second = nextStamps(first, 'W1', 5, 'Failed', 'Completed', none);
    assert.deepEqual(second, [{ o: 'W1', s: 5, f: 'Pending', t: 'Completed' }]);
    assert.equal(nextStamps(first, 'W1', 5, 'Failed', 'Pending', none), undefined);
  });

  test("another writer's move between two moves of one window: both moves are kept, the stamps sum to the buffered delta (review)", () => {
    // W1: Pending -> Failed; the console (unbuffered, no stamp) Failed -> Pending; W1 again: Pending -> Completed.
    // Its buffer holds +Failed +Completed -2 Pending. The one stamp extended to Pending -> Completed said Pending -1,
    // Completed +1 only: a recovery left Pending 1 and Failed -1 against the rows.
    const first = nextStamps(undefined, 'W1', 5, 'Pending', 'Failed', none);
    const after = nextStamps(first, 'W1', 5, 'Pending', 'Completed', none);
    assert.deepEqual(net(after, 'W1'), { Pending: -2, Failed: 1, Completed: 1 });
    // A later back-to-back move extends the stamp that ends where it starts.
    assert.deepEqual(net(nextStamps(after, 'W1', 5, 'Completed', 'Skipped', none), 'W1'), { Pending: -2, Failed: 1, Skipped: 1 });
    // Stamps written before (one per writer and window) read as before, and windows known flushed are dropped.
    const old: CountStamp[] = [{ o: 'W1', s: 4, f: null, t: 'Pending' }, { o: 'W2', s: 9, f: 'Pending', t: 'Failed' }];
    assert.deepEqual(nextStamps(old, 'W1', 5, 'Failed', 'Pending', (o) => (o === 'W1' ? 4 : 0)), [
      { o: 'W2', s: 9, f: 'Pending', t: 'Failed' },
      { o: 'W1', s: 5, f: 'Failed', t: 'Pending' },
    ]);
  });
});

describe('recovery of a writer that died after moves around another writer', () => {
  let f: ProxiedStoreFixture;
  before(async () => {
    f = await startProxiedStoreFixture({ storeVia: 'server' });
  });
  after(async () => {
    await f?.close();
  });

  test('a buffered writer moves a row twice in one window around the console\'s move, then dies: the recovered counters equal a recount', async () => {
    const owner = uniq('dead');
    const ep = uniq('ep');
    // On the shared client past the proxy: a writer never closed (killed) leaves nothing of its own behind.
    const dead = await f.openOnServer({ now: steppingClock(), counterFlushMs: 3_600_000, counterOwner: owner });
    const request = msg(T.EventRequest, { endpointId: ep, eventId: 'e', to: ep });
    await f.store.writeStatus(request); // an unbuffered writer: Pending +1 applied at once
    const failure = msg(T.ErrorResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: request.messageId, errorType: 'X', errorText: 'boom' });
    assert.equal((await dead.writeStatus(failure)).outcome, 'written'); // the buffered writer, window 1: Pending -> Failed
    const resubmit = msg(T.ResubmissionRequest, { endpointId: ep, eventId: 'e', from: 'Manager', to: ep, parentMessageId: failure.messageId });
    assert.equal((await f.store.writeStatus(resubmit)).outcome, 'written'); // the console: Failed -> Pending, applied at once
    const success = msg(T.ResolutionResponse, { endpointId: ep, eventId: 'e', from: ep, parentMessageId: resubmit.messageId });
    assert.equal((await dead.writeStatus(success)).outcome, 'written'); // the buffered writer, same window: Pending -> Completed
    // It dies without flushing; a survivor recovers it. On the code before: Pending 1, Failed -1, Completed 1.
    assert.equal(await f.store.recoverCounters(owner), 2, 'both of its moves applied');
    const counts = await f.store.getCounts(ep);
    assert.deepEqual([counts.pending, counts.failed, counts.completed], [0, 0, 1]);
    assert.deepEqual(counts.buckets, (await f.store.recountEndpoint(ep)).buckets);
  });
});
