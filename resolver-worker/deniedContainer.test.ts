// A 403 confined to one container the message path writes (history) while the access probe's `platform` container
// is allowed (a data-plane role scoped to some containers). docs/resolver.md, "Store failures: one budget": access
// denied -> "receiving stops; the message is left unsettled and comes back | never dead-lettered for this". Before,
// the probe wrote and read `platform` only: halt -> probe OK -> resume -> the same 403 -> halt, a delivery spent each
// cycle, until the broker dead-lettered the message (MaxDeliveryCountExceeded after 10 halts). The probe now also
// creates and reads in the containers an outcome's record writes (store.probeOutcomeAccess), so it stays halted.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { MessageType as T, Topic } from '@nimbus/sdk/contract';
import type { FaultProxy } from '../lib/store/testing/faultProxy.ts';
import { startStoreFaultHarness, type StoreFaultHarness } from './storeFaultHarness.ts';
import { eventually, orderBody, type ResolverHarness } from './testHarness.ts';

let faults: StoreFaultHarness;
let h: ResolverHarness;
let proxy: FaultProxy;
before(async () => {
  faults = await startStoreFaultHarness();
  ({ harness: h, proxy } = faults);
});
after(() => faults?.close());

test('a 403 on the history container only: the message is never dead-lettered (it is held while access is denied), and is recorded once access is back', async () => {
  proxy.inject({ status: 403, match: (r) => r.path.includes('/colls/history') });
  const resolver = h.resolver({ log: pino({ level: 'silent' }), accessProbeMs: 100 });
  const ep = `crm-${randomUUID().slice(0, 8)}`;
  const eventId = `e-${randomUUID().slice(0, 8)}`;
  const m = await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', sessionId: `s-${randomUUID().slice(0, 8)}`, body: orderBody({ n: 1 }) });
  // Give the halt/probe cycle 20 s (the production probe period is 30 s: this is ~10 minutes of a real Resolver's cycles scaled).
  const until = Date.now() + 20_000;
  let dlq = 0;
  while (Date.now() < until) {
    dlq = (await h.clients.admin.getSubscriptionRuntimeProperties(Topic.Resolver, Topic.Resolver)).deadLetterMessageCount;
    if (dlq > 0) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const halts = h.settled.filter((s) => s.messageId === m.messageId && s.settlement.kind === 'halt');
  const dead = dlq > 0 ? await h.deadLetters(5, 300) : [];
  assert.equal(
    dlq,
    0,
    `dead-lettered by the broker after ${halts.length} halts (delivery counts ${halts.map((s) => s.deliveryCount).join(',')}), reason ${dead.map((d) => d.deadLetterReason).join(',')}; state ${JSON.stringify(resolver.state())}`,
  );
  // Tightened: the message met the denial once and the probe kept receiving stopped (one delivery spent, not one per probe).
  assert.equal(halts.length, 1, `halts: delivery counts ${halts.map((s) => s.deliveryCount).join(',')}`);
  assert.match(resolver.state().halted?.reason ?? '', /403/, 'still halted while history is refused');

  // Access back: receiving resumes and the message is recorded on its next delivery.
  proxy.clear();
  const recorded = await eventually(
    () => h.settled.find((s) => s.messageId === m.messageId && s.ok && s.settlement.kind === 'complete'),
    `${m.messageId} recorded`,
    30_000,
  );
  assert.ok(recorded.deliveryCount <= 1, `recorded on delivery ${recorded.deliveryCount + 1}`);
  assert.equal((await h.store.getStatusRow(ep, eventId, m.sessionId))?.status, 'Pending', 'the row is written');
  assert.equal(resolver.state().receiving, true);
  assert.equal((await h.deadLetters(5, 300)).length, 0);
});
