// Two Resolver instances at once, each with its own store client and row cache, on one Cosmos database: the
// broker gives each session to one of them at a time, and the guarded writes are atomic, so nothing is lost or
// recorded twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T } from '../lib/contract/index.ts';
import { createStore } from '../lib/store/index.ts';
import { withHarness, orderBody } from './testHarness.ts';

test('two instances: every event Completed once, one history entry per message, counters exact', async () => {
  await withHarness(async (h) => {
    const second = await createStore({ endpoint: h.cosmosEndpoint, key: h.cosmos.key, database: h.store.database.id });
    try {
      const byInstance = new Map<string, number>();
      const count = (name: string) => () => byInstance.set(name, (byInstance.get(name) ?? 0) + 1);
      const a = count('a');
      const b = count('b');
      h.resolver({ concurrency: 3, onSettled: (e) => (h.settled.push(e), a()) });
      h.resolver({ concurrency: 3, store: second, onSettled: (e) => (h.settled.push(e), b()) });

      const ep = `crm-${randomUUID().slice(0, 6)}`;
      const events = Array.from({ length: 30 }, (_, i) => ({ eventId: `e${i}`, sessionId: `s${i % 10}` }));
      const sent: string[] = [];
      for (const e of events) {
        const req = await h.send({ type: T.EventRequest, ...e, to: ep, from: 'shop', body: orderBody({ orderId: e.sessionId }) });
        const res = await h.send({ type: T.ResolutionResponse, ...e, from: ep, parentMessageId: req.messageId });
        sent.push(req.messageId, res.messageId);
      }
      for (const id of sent) await h.settledOf(id, 1, 30_000);

      assert.equal(h.settled.length, sent.length, 'each message settled exactly once');
      assert.ok(h.settled.every((s) => s.ok && s.settlement.kind === 'complete' && s.settlement.result === 'written'));
      for (const e of events) {
        const row = await h.store.getStatusRow(ep, e.eventId, e.sessionId);
        assert.equal(row?.status, 'Completed', `${e.eventId}`);
        const history = await h.store.listHistory(e.eventId);
        assert.equal(history.items.filter((i) => i.endpointId === ep).length, 2, `${e.eventId} history`);
      }
      await second.flushCounters();
      const counts = await h.store.getCounts(ep);
      assert.equal(counts.completed, 30);
      assert.equal(counts.pending, 0);
      const recount = await h.store.recountEndpoint(ep);
      assert.equal(recount.completed, 30, 'the recount agrees with the maintained counters');
      assert.equal((byInstance.get('a') ?? 0) + (byInstance.get('b') ?? 0), sent.length);
    } finally {
      for (const r of h.resolvers) await r.stop();
      await second.close();
    }
  });
});
