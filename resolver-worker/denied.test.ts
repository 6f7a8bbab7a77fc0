// A wrong Cosmos key must not drain the Resolver topic into its dead-letter queue. The embedded Cosmos server does
// not check keys, so the 401 is put at the wire: the fault proxy in front of it answers 401 to the real
// @azure/cosmos client. The Resolver stops receiving (one clear log line, its state halted, /api/ready not ready),
// consumes and dead-letters nothing while halted, and resumes on its own once the store lets it in again.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { MessageType as T, Topic } from '@nimbus/sdk/contract';
import type { FaultProxy } from '../lib/store/testing/faultProxy.ts';
import { startStoreFaultHarness, type StoreFaultHarness } from './storeFaultHarness.ts';
import { eventually, orderBody, type ResolverHarness } from './testHarness.ts';

let faults: StoreFaultHarness;
let h: ResolverHarness;
let proxy: FaultProxy;
const lines: string[] = [];

before(async () => {
  // ready() reads the console's own store, which reaches Cosmos directly: only the Resolver meets the wrong key.
  faults = await startStoreFaultHarness();
  ({ harness: h, proxy } = faults);
});
after(() => faults?.close());

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;
const ready = () => faults.ready();
/** The settlement that recorded the message (a halt also "lands": it settles nothing and the message comes back). */
const recorded = (messageId: string) =>
  eventually(() => h.settled.find((s) => s.messageId === messageId && s.ok && s.settlement.kind === 'complete'), `${messageId} recorded`, 30_000);
const platformReads = () => proxy.seen.filter((r) => r.path.includes('/colls/platform/')).length;

describe('the store denies the Resolver access (401)', () => {
  test('receiving stops with a clear log line and /api/ready not ready; nothing is dead-lettered; it resumes when access is back', async () => {
    const log = pino({ level: 'info' }, new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }));
    proxy.inject({ status: 401 });
    const resolver = h.resolver({ log, accessProbeMs: 100 });
    const ep = uniq('crm');
    const sent: Array<{ messageId: string; eventId: string; sessionId: string }> = [];
    for (let i = 0; i < 6; i++) {
      const eventId = uniq('e');
      sent.push({ ...(await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', sessionId: `s-${i % 3}`, body: orderBody({ i }) })), eventId });
    }

    // Old behaviour: 401 counted as transient, redelivered ten times and dead-lettered as StoreUnavailable.
    const first = await eventually(async () => {
      if ((resolver as Partial<typeof resolver>).state?.().halted) return 'halted';
      const props = await h.clients.admin.getSubscriptionRuntimeProperties(Topic.Resolver, Topic.Resolver);
      return props.deadLetterMessageCount > 0 ? 'dead-lettered' : undefined;
    }, 'the Resolver to halt (or a dead letter)', 30_000);
    assert.equal(first, 'halted');
    assert.match(resolver.state().halted!.reason, /401.*NIMBUS_COSMOS_KEY/);
    assert.equal(resolver.state().receiving, false);
    assert.equal(lines.filter((l) => l.includes('Resolver: receiving stopped')).length, 1, 'one clear log line');

    const r = await ready();
    assert.equal(r.ready, false);
    assert.match(r.resolver ?? '', /not receiving since .*401/);
    assert.equal(r.cosmos, 'ok', 'the console itself reaches the store');

    // The positive signal that time passes while halted: the access probe runs three more times.
    const seenAtHalt = platformReads();
    await eventually(() => (platformReads() >= seenAtHalt + 3 ? true : undefined), 'three access probes');
    assert.ok(h.settled.every((s) => s.settlement.kind === 'halt'), `only halts: ${h.settled.map((s) => s.settlement.kind).join(',')}`);
    assert.ok(h.settled.length <= 4, 'at most one message per worker met the denial');
    const props = await h.clients.admin.getSubscriptionRuntimeProperties(Topic.Resolver, Topic.Resolver);
    assert.equal(props.deadLetterMessageCount, 0);
    assert.equal(props.activeMessageCount, 6, 'nothing consumed');

    proxy.clear();
    for (const m of sent) {
      const written = await recorded(m.messageId);
      assert.ok(written.deliveryCount <= 2, `${m.messageId} spent ${written.deliveryCount + 1} deliveries`);
    }
    for (const m of sent) assert.equal((await h.store.getStatusRow(ep, m.eventId, m.sessionId))?.status, 'Pending', 'the row is written');
    assert.equal(resolver.state().receiving, true);
    assert.equal(resolver.state().halted, null);
    assert.deepEqual((await ready()).resolver, 'ok');
    assert.ok(lines.some((l) => l.includes('receiving resumes')));
    assert.equal((await h.deadLetters(5, 300)).length, 0);
  });

  test('403 on writes only (a read-only key): halted with the reason, and it stays halted while writes are refused', async () => {
    const log = pino({ level: 'silent' });
    const settledBefore = h.settled.length;
    proxy.inject({ status: 403, match: (r) => r.method === 'PUT' || r.method === 'POST' });
    const resolver = h.resolver({ log, accessProbeMs: 100 });
    const ep = uniq('crm');
    const eventId = uniq('e');
    const m = await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', sessionId: uniq('s'), body: orderBody({ n: 1 }) });
    await eventually(() => (resolver.state().halted ? true : undefined), 'the halt', 30_000);
    assert.match(resolver.state().halted!.reason, /403/);
    const seenAtHalt = platformReads();
    await eventually(() => (platformReads() >= seenAtHalt + 3 ? true : undefined), 'three access probes');
    assert.ok(resolver.state().halted, 'a probe whose write is refused does not resume receiving');
    assert.ok(h.settled.slice(settledBefore).every((s) => s.settlement.kind === 'halt'));
    proxy.clear();
    await recorded(m.messageId);
    assert.equal((await h.store.getStatusRow(ep, eventId, m.sessionId))?.status, 'Pending');
    assert.equal((await h.deadLetters(5, 300)).length, 0);
  });
});
