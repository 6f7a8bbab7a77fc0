// A session is never worked on past its lock. The client renews a session lock only until
// maxAutoLockRenewalDurationInMs after the accept; a session with a steady backlog used to be kept for as long as its
// receives came back full, so past that horizon the lock ran out mid-batch, the completions failed
// ("SessionLockLost") and the broker delivered those messages again, each spending one delivery of its budget. The
// receive loop now stops taking messages a margin before the horizon (the same margin the outage hold uses), settles
// what it has and releases the session, which is accepted again with a fresh lock and a fresh horizon.
//
// Real emulator, real Cosmos (the embedded server behind the fault proxy, as the other Resolver tests), real client.
// The subscription's lock is shortened to 3 s so that the lock really runs out a little after a 5 s horizon (the
// client renews it at half its remaining time while the horizon allows), as it would after 5 min in production.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { pino, type Logger } from 'pino';
import { HEARTBEAT_EVENT_TYPE_ID, MessageType as T, Topic, eventBody } from '@nimbus/sdk/contract';
import type { FaultProxy } from '../lib/store/testing/faultProxy.ts';
import { ResolverHarness, eventually, orderBody } from './testHarness.ts';

const LOCK_MS = 3_000;
const HORIZON_MS = 5_000;

let h: ResolverHarness;
let proxy: FaultProxy;
before(async () => {
  ({ harness: h, proxy } = await ResolverHarness.startBehindProxy());
  const sub = await h.clients.admin.getSubscription(Topic.Resolver, Topic.Resolver);
  await h.clients.admin.updateSubscription({ ...sub, lockDuration: `PT${LOCK_MS / 1000}S` });
});
after(async () => {
  await h?.close();
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;
const isEventWrite = (r: { method: string; path: string }) =>
  (r.method === 'PUT' || r.method === 'POST') && r.path.includes('/colls/events/');
const isHeartbeatWrite = (r: { method: string; path: string }) =>
  (r.method === 'PUT' || r.method === 'POST') && r.path.includes('/colls/heartbeats/');

/** A logger whose lines the test can read (the Resolver's log is its only word on why a session was released). */
function capturingLog(): { log: Logger; messages: () => string[] } {
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  return { log, messages: () => lines.map((l) => String((JSON.parse(l) as { msg?: unknown }).msg)) };
}

describe('the session lock-renewal horizon', () => {
  test('a session with a steady backlog is released before its lock horizon and accepted again: no message is delivered twice', async () => {
    const ep = uniq('crm');
    const sessionId = uniq('s');
    const { log, messages } = capturingLog();
    const horizonReleases = () =>
      messages().filter((m) => m.includes('released before its lock-renewal horizon')).length;
    const sent = new Set<string>();
    const ours = () => h.settled.filter((s) => sent.has(s.messageId));
    // On the old code the lock runs out under the backlog: a settlement fails, or a message comes back.
    const lockLost = () => ours().some((s) => !s.ok || s.deliveryCount > 0);

    const resolver = h.resolver({
      log,
      maxAutoLockRenewalDurationInMs: HORIZON_MS,
      maxMessagesPerReceive: 3,
    });
    // The producer keeps a backlog of about a hundred messages on the one session, so every receive comes back full
    // and the loop never releases the session for want of messages.
    let producing = true;
    const producer = (async () => {
      while (producing) {
        const backlog = sent.size - ours().filter((s) => s.ok).length;
        if (backlog >= 100) {
          await delay(20);
          continue;
        }
        const batch = await Promise.all(
          Array.from({ length: 20 }, () =>
            h.send({
              type: T.EventRequest,
              eventId: uniq('e'),
              to: ep,
              from: 'shop',
              sessionId,
              body: orderBody({}),
            }),
          ),
        );
        for (const m of batch) sent.add(m.messageId);
      }
    })();
    try {
      // Two releases at the horizon: the session was accepted again after the first and ran to a second horizon.
      const first = await eventually(
        () => (lockLost() ? 'lock lost' : horizonReleases() >= 2 ? 'released twice' : undefined),
        'two releases at the horizon, or a lost lock',
        120_000,
      );
      producing = false;
      await producer;
      // Everything sent is settled (a message that came back is settled on its next delivery).
      for (const id of sent) await h.settledOk(id, 60_000);
      const failed = ours().filter((s) => !s.ok);
      assert.deepEqual(
        failed.map((s) => s.settlement.kind),
        [],
        'no settlement failed (the lock never ran out)',
      );
      const again = ours().filter((s) => s.deliveryCount > 0);
      assert.deepEqual(
        again.map((s) => s.messageId),
        [],
        'no message delivered twice',
      );
      assert.equal(first, 'released twice');
      assert.equal(ours().length, sent.size, 'each message settled once');
      assert.ok(
        ours().every((s) => s.settlement.kind === 'complete'),
        'every message recorded',
      );
    } finally {
      producing = false;
      await producer.catch(() => undefined);
      await resolver.stop();
    }
  });

  test('a heartbeat write retried in place while the store answers stops before the lock horizon: abandoned with the lock held, recorded on its next delivery', async () => {
    const ep = uniq('crm');
    const probeId = randomUUID();
    // Every heartbeat write fails (503) while the store's probe (the platform container) answers: the write is
    // retried in place. Its nine waits of 1 s outlast the 5 s horizon and the lock's end a little after it; on the
    // old code the budget ran out after the lock and the dead letter failed with it (the heartbeat came back).
    proxy.inject({ status: 503, match: isHeartbeatWrite });
    const inPlace = () =>
      h.metrics.counts('nimbus.resolver.store_retry', {
        'nimbus.retry.action': 'retried_in_place',
        'nimbus.message_type': 'heartbeat',
      });
    const inPlaceBefore = inPlace();
    const resolver = h.resolver({
      maxAutoLockRenewalDurationInMs: HORIZON_MS,
      budget: { baseDelayMs: 1_000, maxDelayMs: 1_000 },
      inPlaceMaxDelayMs: 1_000,
    });
    try {
      const hb = await h.send({
        type: T.ResolutionResponse,
        eventId: uniq('hb'),
        from: ep,
        sessionId: uniq('s'),
        correlationId: probeId,
        parentMessageId: probeId,
        eventTypeId: HEARTBEAT_EVENT_TYPE_ID,
        body: eventBody(HEARTBEAT_EVENT_TYPE_ID, { ForwardSendTime: new Date().toISOString(), Endpoint: ep }),
      });
      const [first] = await h.settledOf(hb.messageId, 1, 60_000);
      proxy.clear();
      assert.ok(inPlace() > inPlaceBefore, 'retried in place first');
      assert.deepEqual(
        { kind: first!.settlement.kind, ok: first!.ok, deliveryCount: first!.deliveryCount },
        { kind: 'redeliver', ok: true, deliveryCount: 0 },
        'abandoned on its first delivery, while the lock still held',
      );
      assert.equal(
        first!.settlement.kind === 'redeliver' && first!.settlement.delayMs,
        0,
        'abandoned at once, no back-off wait',
      );
      const recorded = await eventually(
        () => h.settled.find((s) => s.messageId === hb.messageId && s.ok && s.settlement.kind === 'complete'),
        'the heartbeat recorded on a later delivery',
        60_000,
      );
      assert.deepEqual(recorded.settlement, { kind: 'complete', result: 'heartbeat' });
      assert.ok(recorded.deliveryCount >= 1);
      assert.ok(
        h.settled.filter((s) => s.messageId === hb.messageId).every((s) => s.ok),
        'no settlement of the heartbeat failed',
      );
      const [record] = await h.store.listHeartbeats(ep);
      assert.equal(record?.probeId, probeId);
      assert.equal(record?.status, 'On');
    } finally {
      proxy.clear();
      await resolver.stop();
    }
  });

  for (const [what, max] of [
    ['with lock renewal off (0) the lock itself is the horizon', 0],
    [
      'with a lock shorter than the 5 s margin (3 s) and the default horizon, the margin is a tenth of the lock',
      undefined,
    ],
  ] as const) {
    test(`${what}: the session is worked on, not released at once`, async () => {
      const ep = uniq('crm');
      const sessionId = uniq('s');
      const sent = [];
      for (let i = 0; i < 3; i++) {
        sent.push(
          await h.send({
            type: T.EventRequest,
            eventId: uniq('e'),
            to: ep,
            from: 'shop',
            sessionId,
            body: orderBody({ i }),
          }),
        );
      }
      // A horizon of "accept + 0", or a margin longer than the lock, would release every session before its first
      // receive, for ever.
      const resolver = h.resolver(max === undefined ? {} : { maxAutoLockRenewalDurationInMs: max });
      try {
        for (const m of sent) {
          const done = await h.settledOk(m.messageId, 60_000);
          assert.deepEqual(
            { kind: done.settlement.kind, deliveryCount: done.deliveryCount },
            { kind: 'complete', deliveryCount: 0 },
          );
        }
      } finally {
        await resolver.stop();
      }
    });
  }

  test('the back-off before an abandon ends at the lock horizon: the abandon lands while the lock holds', async () => {
    const ep = uniq('crm');
    // The write and its one retry in place fail while the store answers its probe: the message is left for
    // redelivery after a back-off of 20 s, far past the 5 s horizon and the lock's end a little after it. On the
    // old code the abandon came after the lock was lost and failed.
    proxy.inject({ status: 503, times: 2, match: isEventWrite });
    const resolver = h.resolver({
      maxAutoLockRenewalDurationInMs: HORIZON_MS,
      budget: { baseDelayMs: 20_000, maxDelayMs: 20_000 },
      transientMaxDelayMs: 20_000,
    });
    try {
      const m = await h.send({
        type: T.EventRequest,
        eventId: uniq('e'),
        to: ep,
        from: 'shop',
        sessionId: uniq('s'),
        body: orderBody({}),
      });
      const [first] = await h.settledOf(m.messageId, 1, 60_000);
      assert.deepEqual(
        { kind: first!.settlement.kind, ok: first!.ok, deliveryCount: first!.deliveryCount },
        { kind: 'redeliver', ok: true, deliveryCount: 0 },
        'abandoned on its first delivery, while the lock still held',
      );
      const recorded = await eventually(
        () => h.settled.find((s) => s.messageId === m.messageId && s.ok && s.settlement.kind === 'complete'),
        'the message recorded on a later delivery',
        60_000,
      );
      assert.equal(recorded.deliveryCount, 1, 'recorded on its next delivery');
      assert.ok(
        h.settled.filter((s) => s.messageId === m.messageId).every((s) => s.ok),
        'no settlement failed',
      );
    } finally {
      proxy.clear();
      await resolver.stop();
    }
  });
});
