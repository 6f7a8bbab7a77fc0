// Copies that come back are not counted twice in the stored time series. A terminal write (an ErrorResponse) always
// passes the stale-write guard, so when it and a later message of its row both come back (a crash before their
// completions, a lost session lock, a stop leaving a write running, completions given up at the broker deadline)
// the copy is applied again over the later version. The row ends right; the outcome must still be counted once,
// on the row-group path (both messages in one receive) and on the single-message path (each alone). Real emulator
// and embedded Cosmos; each phase's Resolver is stopped before the series is read, and its stop flushes the series.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T } from '@nimbus/sdk/contract';
import { TimeSeriesStore } from '../lib/store/index.ts';
import { ResolverHarness, errorBody, eventually, type WireMessage } from './testHarness.ts';

let h: ResolverHarness;
before(async () => {
  h = await ResolverHarness.start();
});
after(async () => {
  await h.close();
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

/** Completions of `messageId` so far. */
const completions = (messageId: string) => h.settled.filter((s) => s.messageId === messageId && s.ok && s.settlement.kind === 'complete').length;

/** A failure recorded on a row, then the retry policy's RetryRequest answering it (the row back to Pending). */
function failureThenRetry() {
  const ep = uniq('crm');
  const eventId = uniq('e');
  const sessionId = uniq('s');
  const x: WireMessage = { type: T.ErrorResponse, messageId: uniq('x'), eventId, sessionId, from: ep, parentMessageId: uniq('req'), body: errorBody('boom') };
  const y: WireMessage = { type: T.RetryRequest, messageId: uniq('y'), eventId, sessionId, to: ep, from: 'shop', parentMessageId: x.messageId, props: { RetryCount: 1 } };
  return { ep, eventId, sessionId, x, y };
}

/** The `failed` count the stored series holds for the endpoint (every bucket of the last hour and the next). */
async function failedCount(ep: string): Promise<number> {
  const now = Date.now();
  const series = await new TimeSeriesStore(h.store.database).query({ from: now - 3_600_000, to: now + 3_600_000, bucketMs: 3_600_000, endpointId: ep });
  return series.find((s) => s.name === 'failed')!.points.reduce((n, [, v]) => n + (v ?? 0), 0);
}

/**
 * Sends the messages before a Resolver starts, so one receive takes them all (one row: the row-group path), and
 * stops it once each is completed `times` times in all.
 */
async function inOneReceive(msgs: WireMessage[], times: number): Promise<void> {
  for (const m of msgs) await h.send(m);
  const r = h.resolver({ maxMessagesPerReceive: 50, history: { flushMs: 100 } });
  try {
    for (const m of msgs) await eventually(() => completions(m.messageId!) >= times || undefined, `completion ${times} of ${m.messageId}`);
  } finally {
    await r.stop();
  }
}

/** Sends each message only once the one before is completed, so each is resolved alone (the single-message path). */
async function oneByOne(msgs: WireMessage[], times: number): Promise<void> {
  const r = h.resolver({ history: { flushMs: 100 } });
  try {
    for (const m of msgs) {
      await h.send(m);
      await eventually(() => completions(m.messageId!) >= times || undefined, `completion ${times} of ${m.messageId}`);
    }
  } finally {
    await r.stop();
  }
}

describe('an ErrorResponse and the RetryRequest after it both come back', () => {
  for (const [path, deliver] of [
    ['in one receive (a row group)', inOneReceive],
    ['one by one (single messages)', oneByOne],
  ] as const) {
    test(`${path}: the row ends Pending and the failure is counted once`, async () => {
      const { ep, eventId, sessionId, x, y } = failureThenRetry();
      await deliver([x, y], 1);
      const first = await h.store.getStatusRow(ep, eventId, sessionId);
      assert.equal(first?.status, 'Pending');
      assert.equal(first?.lastMessageId, y.messageId);
      assert.equal(await failedCount(ep), 1, 'the failure counted when it was recorded');

      // The same two message ids again: the copy of the failure is applied over the retry's version (a terminal
      // write always passes the guard), then the retry's copy over it.
      await deliver([x, y], 2);
      const again = await h.store.getStatusRow(ep, eventId, sessionId);
      assert.equal(again?.status, 'Pending');
      assert.equal(again?.lastMessageId, y.messageId);
      assert.equal(await failedCount(ep), 1, 'the copies add no second failure');
    });
  }
});
