// Two Resolver instances at once, each with its own store client and row cache, on one Cosmos database: the
// broker gives each session to one of them at a time, and the guarded writes are atomic, so nothing is lost or
// recorded twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T } from '@nimbus/sdk/contract';
import { createStore } from '../lib/store/index.ts';
import { withHarness, orderBody } from './testHarness.ts';

test('two instances: every event Completed, one history entry per message, counters exact', async () => {
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
      for (const id of sent) await h.settledOk(id);

      // Delivery is at least once: on a loaded machine a session lock can lapse before a completion lands, and the
      // message comes back (to either instance). What must hold is that every message ends settled, and that a
      // second delivery changes nothing: its history write is idempotent and its status write is refused or
      // re-applies the same outcome.
      const byMessage = new Map<string, typeof h.settled>();
      for (const e of h.settled) byMessage.set(e.messageId, [...(byMessage.get(e.messageId) ?? []), e]);
      assert.equal(byMessage.size, sent.length);
      for (const [id, settlements] of byMessage) {
        assert.ok(settlements.some((s) => s.ok), `${id} ends settled`);
        for (const s of settlements) assert.ok(s.settlement.kind === 'complete' && ['written', 'ignored'].includes(s.settlement.result), `${id}: ${s.settlement.kind}`);
        assert.ok(settlements.filter((s) => s.ok).length === 1, `${id} is delivered again only when a settlement did not land`);
      }
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
      assert.equal((byInstance.get('a') ?? 0) + (byInstance.get('b') ?? 0), h.settled.length);
    } finally {
      for (const r of h.resolvers) await r.stop();
      await second.close();
    }
  });
});
