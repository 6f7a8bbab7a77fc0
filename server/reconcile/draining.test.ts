// Sessions that drain forever, on the emulator with the real @azure/service-bus client and the embedded Cosmos
// server: a session whose state says "draining, waiting for parked message #0" while only #1 is still parked (#0 was
// lost) is found with why and what the repair does; the repair moves the cursor to #1 under the session's lock and
// sends the replay trigger to the deferred processor; it is audited, and a second repair changes nothing. A
// draining session whose awaited message is still parked is not reported. A store listing that fails after the scan
// ran out of time does not become an unhandled rejection (which would end the console process). A POST naming an
// endpoint outside the catalog, or no endpoint id at all, is refused before anything in it is applied.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Address, decodeSessionState, encodeSessionState, MessageType, Prop, Subscription, emptySessionState } from '@nimbus/sdk/contract';
import type { MessageStore } from '../../lib/store/index.ts';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { findDrainingSessions, RECONCILE_AUDIT_EVENT, repairDrainingSessions } from './draining.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const stack = useConsoleStack({ database: 'draining' });
const ep = 'billingendpoint';

/** A session as the SDK leaves it: unblocked, `parked` messages parked, the cursor at `cursor`; `present` still on Deferred. */
async function drainingSession(parked: number, cursor: number, present: number[]): Promise<string> {
  const sessionId = `S-${randomUUID().slice(0, 8)}`;
  const main = await stack.serviceBus.client.acceptSession(ep, ep, sessionId);
  try {
    await main.setSessionState(Buffer.from(encodeSessionState({ ...emptySessionState(), DeferredCount: parked, NextDeferralSequence: parked, NextReplaySequence: cursor })));
  } finally {
    await main.close();
  }
  const sender = stack.serviceBus.client.createSender(ep);
  try {
    for (const seq of present) {
      await sender.sendMessages({
        messageId: `evt-${sessionId}-${seq}~parked`,
        sessionId,
        body: Buffer.from('{}'),
        applicationProperties: { [Prop.To]: Address.Deferred, [Prop.MessageType]: MessageType.EventRequest, [Prop.EventId]: `evt-${sessionId}-${seq}`, [Prop.DeferralSequence]: seq },
      });
    }
  } finally {
    await sender.close();
  }
  // The store's view that makes it a candidate: an event of that session parked (Deferred).
  const eventId = `evt-${sessionId}-new`;
  const w = { endpointId: ep, eventId, sessionId, messageId: `${eventId}-def`, messageType: MessageType.DeferralResponse, parentMessageId: `${eventId}-req`, enqueuedAt: new Date().toISOString(), blockedBy: null };
  await stack.store.recordOutcome({ history: w, status: w });
  return sessionId;
}

async function stateOf(sessionId: string) {
  const main = await stack.serviceBus.client.acceptSession(ep, ep, sessionId);
  try {
    return decodeSessionState(await main.getSessionState());
  } finally {
    await main.close();
  }
}

describe('reconcile: sessions draining forever', () => {
  test('a gap in the parked messages is found, the cursor moved past it under the lock, the replay triggered, audited', async () => {
    const stuck = await drainingSession(2, 0, [1]);
    const healthy = await drainingSession(2, 0, [0, 1]);

    const scan = await findDrainingSessions(stack.serviceBus.client, stack.store, [ep]);
    assert.deepEqual(scan.sessions.map((s) => s.sessionId), [stuck], 'only the session whose awaited message is gone');
    const finding = scan.sessions[0]!;
    assert.deepEqual([finding.nextReplaySequence, finding.nextDeferralSequence, finding.parkedSequences], [0, 2, [1]]);
    assert.match(finding.why, /waits for parked message #0, which is no longer on the Deferred subscription/);
    assert.match(finding.does, /move the replay past the gap to #1/);

    const target = { endpointId: ep, sessionId: stuck, nextReplaySequence: 0 };
    const [result] = await repairDrainingSessions(stack.serviceBus.client, stack.store, [target], 'operator@test');
    assert.equal(result?.outcome, 'repaired', result?.reason);
    const state = await stateOf(stuck);
    assert.equal(state.NextReplaySequence, 1);
    assert.equal(state.NextDeferralSequence, 2);

    // The deferred processor's trigger: to DeferredProcessor, naming the session and where the pass ends.
    const triggers = stack.serviceBus.client.createReceiver(ep, Subscription.DeferredProcessor);
    try {
      const [t] = await triggers.receiveMessages(1, { maxWaitTimeInMs: 5000 });
      assert.ok(t, 'a replay trigger was sent');
      assert.equal(t.applicationProperties?.[Prop.MessageType], MessageType.ProcessDeferredRequest);
      assert.equal(t.applicationProperties?.[Prop.SessionId], stuck);
      assert.equal(t.applicationProperties?.[Prop.ReplayUntil], 2);
      await triggers.completeMessage(t);
    } finally {
      await triggers.close();
    }
    const audits = (await stack.store.listAudits(RECONCILE_AUDIT_EVENT)).items.filter((a) => a.type === 'ReconcileDrainingSession');
    assert.equal(audits.length, 1);
    assert.equal(audits[0]!.auditor, 'operator@test');
    assert.match(audits[0]!.data ?? '', new RegExp(stuck));

    const [again] = await repairDrainingSessions(stack.serviceBus.client, stack.store, [target], 'operator@test');
    assert.equal(again?.outcome, 'unchanged');
    assert.equal((await stateOf(healthy)).NextReplaySequence, 0, 'the healthy session was not touched');
    assert.ok(!(await findDrainingSessions(stack.serviceBus.client, stack.store, [ep])).sessions.some((s) => s.sessionId === stuck));
  });

  test('a store listing that fails after the budget ran out is observed: no unhandled rejection', async () => {
    // The real store, its listing held until the scan has answered and then failed (a Cosmos error arriving late).
    let fail!: (err: Error) => void;
    const late = new Promise<never>((_, reject) => (fail = reject));
    let listed!: () => void;
    const listingStarted = new Promise<void>((r) => (listed = r));
    const slowStore = new Proxy(stack.store, {
      get(target, key, receiver) {
        if (key !== 'listEvents') return Reflect.get(target, key, receiver) as unknown;
        return () => {
          listed();
          return late;
        };
      },
    }) as MessageStore;
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const scan = await findDrainingSessions(stack.serviceBus.client, slowStore, [ep], { budgetMs: 1 });
      await listingStarted;
      assert.equal(scan.scanLimited, true, 'the budget answered, the listing had not');
      fail(new Error('store unavailable (late)'));
      // Node reports unhandled rejections once the microtask queue is drained, before the next macrotask.
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      assert.deepEqual(unhandled.map(String), []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  test('through the API: the preview lists the session with why and what the repair does; apply repairs it', async () => {
    const route = await import('../../app/api/operations/reconcile/route.ts');
    const stuck = await drainingSession(3, 1, [2]);
    const req = (method: string, body?: unknown) =>
      new Request('http://127.0.0.1/api/operations/reconcile', { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const preview = (await (await route.GET(req('GET'))).json()) as {
      draining: { sessions: Array<{ sessionId: string; endpointId: string; nextReplaySequence: number; why: string; does: string }>; scanLimited: boolean; checked: number; candidates: number };
    };
    const found = preview.draining.sessions.find((d) => d.sessionId === stuck);
    assert.ok(found, JSON.stringify(preview.draining));
    // Within its time budget the scan looks at every candidate and says it was not cut short.
    assert.equal(preview.draining.scanLimited, false);
    assert.equal(preview.draining.checked, preview.draining.candidates);
    assert.match(found.why, /#1/);
    assert.match(found.does, /to #2/);
    const res = await route.POST(req('POST', { sessions: [{ endpointId: ep, sessionId: stuck, nextReplaySequence: 1 }] }));
    const body = (await res.json()) as { repaired: number; sessions: Array<{ outcome: string }> };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.repaired, 1);
    assert.equal((await stateOf(stuck)).NextReplaySequence, 2);
  });

  test("through the API: a body naming an endpoint that is not the catalog's is refused whole, nothing applied", async () => {
    // Before, any 1-50 characters passed: a session entry's endpoint became the topic and subscription names, so a
    // missing or path-like one was a 500 after the body's earlier entries were applied, and "Resolver" opened a
    // session receiver on the platform's own subscription.
    const route = await import('../../app/api/operations/reconcile/route.ts');
    const stuck = await drainingSession(3, 1, [2]);
    const good = { endpointId: ep, sessionId: stuck, nextReplaySequence: 1 };
    const post = async (body: unknown) => {
      const res = await route.POST(new Request('http://127.0.0.1/api/operations/reconcile', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
      return { status: res.status, text: await res.text() };
    };
    const refused: Array<[string, number, RegExp]> = [
      ['nosuchendpoint', 404, /endpoint nosuchendpoint is not in the catalog/],
      ['Resolver', 404, /endpoint Resolver is not in the catalog/],
      [`${ep}/Subscriptions/x`, 400, /endpoint ids are letters, digits/],
      [` ${ep}`, 400, /endpoint ids are letters, digits/],
    ];
    for (const [endpointId, status, words] of refused) {
      // The good session first: it would be repaired before the bad entry was reached.
      const inSessions = await post({ sessions: [good, { endpointId, sessionId: 'S-none', nextReplaySequence: 0 }] });
      assert.equal(inSessions.status, status, `sessions ${JSON.stringify(endpointId)}: ${inSessions.text}`);
      assert.match(inSessions.text, words);
      const inTargets = await post({ targets: [{ endpointId, eventId: 'evt-none', sessionId: 'S-none', rowMessageId: 'm-none' }], sessions: [good] });
      assert.equal(inTargets.status, status, `targets ${JSON.stringify(endpointId)}: ${inTargets.text}`);
      assert.equal((await stateOf(stuck)).NextReplaySequence, 1, `${JSON.stringify(endpointId)}: the good session was not repaired`);
    }
    // The same good entry alone is repaired: the refusals above were of the bad id, not of it.
    const alone = await post({ sessions: [good] });
    assert.equal(alone.status, 200, alone.text);
    assert.equal((await stateOf(stuck)).NextReplaySequence, 2);
  });
});
