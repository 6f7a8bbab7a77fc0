// The SDK's flows with the Resolver and the store in the loop: publish -> forwarder -> handler -> response ->
// Resolver -> status row, history and counters, through the real clients on the embedded emulators.
import { describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import assert from 'node:assert/strict';
import { eventBody, HEARTBEAT_EVENT_TYPE_ID, MessageType, Prop, WellKnownSession, encodeBody } from '@nimbus/sdk/contract';
import { classifier } from '@nimbus/sdk';
import { PermanentFailureError } from '@nimbus/sdk';
import { HandlerRegistry } from '@nimbus/sdk';
import { RetryPolicies } from '@nimbus/sdk';
import { HandoffClient } from '@nimbus/sdk';
import { endProcessAfterResults, withHarness as withSdkHarness, type Harness } from '../packages/sdk/e2e/harness.ts';
import { type EndpointCounts, type HistoryEntry, type MessageStore, type StatusRowSummary } from '../lib/store/index.ts';
import { eventually, startStoreAndResolver } from './testHarness.ts';

// A session accept still opening when the hosts and the Resolver stop leaves rhea-promise's 60 s link-open timer
// behind, which held this process up for about a minute after its last result (harness.ts explains the exit).
endProcessAfterResults();

type Customer = { customerId: string; n: number; fixed?: boolean };

/** The SDK harness plus an embedded Cosmos store and a Resolver on the same emulator. */
async function withResolver(body: (h: Harness, store: MessageStore) => Promise<void>): Promise<void> {
  await withSdkHarness(async (h) => {
    const { store, close } = await startStoreAndResolver(h.client, 'e2e');
    try {
      await body(h, store);
    } finally {
      await close();
    }
  });
}

/** Waits until the endpoint's rows of one session satisfy `ok`. */
async function rowsOf(store: MessageStore, endpointId: string, sessionId: string, ok: (rows: StatusRowSummary[]) => boolean): Promise<StatusRowSummary[]> {
  return eventually(async () => {
    const page = await store.listEvents({ endpointId, sessionId });
    return ok(page.items) ? page.items : undefined;
  }, `rows of ${endpointId}/${sessionId}`, 20_000);
}

const statuses = (rows: StatusRowSummary[]) => rows.map((r) => `${r.status}${r.subStatus ? `/${r.subStatus}` : ''}`).sort();

type Counts = Pick<EndpointCounts, 'pending' | 'handoff' | 'deferred' | 'failed' | 'deadLettered' | 'unsupported' | 'completed' | 'skipped'>;
const NO_COUNTS: Counts = { pending: 0, handoff: 0, deferred: 0, failed: 0, deadLettered: 0, unsupported: 0, completed: 0, skipped: 0 };

/**
 * Asserts the endpoint's counters: every column not named must be 0. The counter patch follows the row write,
 * so a reader that has just seen the row may be a moment early: the counters are polled before the assertion.
 */
async function expectCounts(store: MessageStore, endpointId: string, expected: Partial<Counts>): Promise<void> {
  const want = { ...NO_COUNTS, ...expected };
  const read = async (): Promise<Counts> => {
    const c = await store.getCounts(endpointId);
    return { pending: c.pending, handoff: c.handoff, deferred: c.deferred, failed: c.failed, deadLettered: c.deadLettered, unsupported: c.unsupported, completed: c.completed, skipped: c.skipped };
  };
  await eventually(async () => (isDeepStrictEqual(await read(), want) ? true : undefined), `counters of ${endpointId}`, 5_000).catch(() => undefined);
  assert.deepEqual(await read(), want);
}

/**
 * Asserts the event's history as the multiset of message types recorded (one entry per MessageId, so a copy
 * recorded twice would show). History is written before the status, but a later message of the flow (the
 * resubmission's response after the row already moved) can still be on its way: polled before the assertion.
 */
async function expectHistory(store: MessageStore, eventId: string, expected: string[]): Promise<HistoryEntry[]> {
  const want = [...expected].sort();
  const read = async () => (await store.listHistory(eventId)).items;
  await eventually(async () => (isDeepStrictEqual((await read()).map((i) => i.messageType).sort(), want) ? true : undefined), `history of ${eventId}`, 5_000).catch(() => undefined);
  const items = await read();
  assert.deepEqual(items.map((i) => i.messageType).sort(), want, `history of ${eventId}`);
  return items;
}

describe('SDK flows recorded by the Resolver', () => {
  test('happy path -> Completed; failure -> Failed, siblings Deferred, resubmit -> all Completed; counters follow', async () => {
    await withResolver(async (h, store) => {
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          if (e.n === 1 && !e.fixed && e.customerId === 'F-1') throw new Error('CRM rejected the customer');
        }),
      });
      h.deferredProcessor('crm');
      const pub = h.publisher('shop');

      await pub.publish('CustomerUpdated', { customerId: 'H-1', n: 1 });
      const [done] = await rowsOf(store, 'crm', 'H-1', (r) => r.length === 1 && r[0]!.status === 'Completed');
      const history = await expectHistory(store, done!.eventId, ['EventRequest', 'ResolutionResponse']);
      assert.equal(history.find((i) => i.messageType === 'EventRequest')?.from, 'shop');
      await expectCounts(store, 'crm', { completed: 1 });

      for (const n of [1, 2, 3]) await pub.publish('CustomerUpdated', { customerId: 'F-1', n });
      const blocked = await rowsOf(store, 'crm', 'F-1', (r) => statuses(r).join() === 'Deferred,Deferred,Failed');
      const failed = blocked.find((r) => r.status === 'Failed')!;
      const siblings = blocked.filter((r) => r.status === 'Deferred');
      assert.equal(failed.errorText, 'CRM rejected the customer');
      await expectHistory(store, failed.eventId, ['EventRequest', 'ErrorResponse']);
      for (const sibling of siblings) await expectHistory(store, sibling.eventId, ['EventRequest', 'DeferralResponse']);
      await expectCounts(store, 'crm', { completed: 1, failed: 1, deferred: 2 });

      await h.managerCommand(
        'crm',
        MessageType.ResubmissionRequest,
        { eventId: failed.eventId, sessionId: 'F-1', eventTypeId: 'CustomerUpdated' },
        eventBody('CustomerUpdated', { customerId: 'F-1', n: 1, fixed: true }),
      );
      await rowsOf(store, 'crm', 'F-1', (r) => statuses(r).join() === 'Completed,Completed,Completed');
      const resubmitted = await expectHistory(store, failed.eventId, ['EventRequest', 'ErrorResponse', 'ResubmissionRequest', 'ResolutionResponse']);
      assert.equal(resubmitted.find((i) => i.messageType === 'ResubmissionRequest')?.from, 'Manager');
      // The parked copies are replayed under ids derived from the originals: a second EventRequest entry each.
      for (const sibling of siblings) {
        await expectHistory(store, sibling.eventId, ['EventRequest', 'DeferralResponse', 'EventRequest', 'ResolutionResponse']);
      }
      await expectCounts(store, 'crm', { completed: 4 });
    });
  });

  test('handoff -> Pending/Handoff -> completed by the handoff client -> Completed; heartbeat never tracked', async () => {
    await withResolver(async (h, store) => {
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (_e, ctx) => {
          ctx.markPendingHandoff('DMF import', 'job-1', 60_000);
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'P-1', n: 1 });
      const [parked] = await rowsOf(store, 'crm', 'P-1', (r) => r.length === 1 && r[0]!.subStatus === 'Handoff');
      assert.equal(parked!.status, 'Pending');
      assert.equal(parked!.handoffReason, 'DMF import');
      assert.equal(parked!.externalJobId, 'job-1');
      await expectHistory(store, parked!.eventId, ['EventRequest', 'PendingHandoffResponse']);
      await expectCounts(store, 'crm', { pending: 1, handoff: 1 });

      const handoff = new HandoffClient(h.client);
      try {
        await handoff.complete({ endpointId: 'crm', eventId: parked!.eventId, sessionId: 'P-1', messageId: parked!.requestMessageId ?? parked!.lastMessageId, eventTypeId: 'CustomerUpdated' });
      } finally {
        await handoff.close();
      }
      const [completed] = await rowsOf(store, 'crm', 'P-1', (r) => r.length === 1 && r[0]!.status === 'Completed');
      assert.equal(completed!.subStatus, null);
      await expectHistory(store, parked!.eventId, ['EventRequest', 'PendingHandoffResponse', 'HandoffCompletedRequest', 'ResolutionResponse']);
      await expectCounts(store, 'crm', { completed: 1 });

      // A heartbeat probe as the scheduler sends it: straight to the endpoint topic, From = Manager.
      await h.send('crm', {
        sessionId: WellKnownSession.Heartbeat,
        messageId: 'probe-1',
        correlationId: 'probe-1',
        body: encodeBody({ EventContent: { EventTypeId: HEARTBEAT_EVENT_TYPE_ID, EventJson: JSON.stringify({ ForwardSendTime: new Date().toISOString() }) } }),
        props: { [Prop.To]: 'crm', [Prop.From]: 'Manager', [Prop.MessageType]: MessageType.EventRequest, [Prop.EventTypeId]: HEARTBEAT_EVENT_TYPE_ID, [Prop.EventId]: 'hb-1' },
      });
      const [record] = await eventually(async () => {
        const r = await store.listHeartbeats('crm');
        return r.length > 0 ? r : undefined;
      }, 'the heartbeat record');
      assert.equal(record!.probeId, 'probe-1');
      assert.equal(record!.status, 'On');
      assert.equal((await store.listEvents({ endpointId: 'crm', sessionId: WellKnownSession.Heartbeat })).items.length, 0);
      assert.equal((await store.listHistory('hb-1')).items.length, 0);
      await expectCounts(store, 'crm', { completed: 1 });
    });
  });

  test('dead letter -> DeadLettered with its reason; unsupported -> Unsupported; a policy retry -> Completed with a Retry audit', async () => {
    await withResolver(async (h, store) => {
      let attempts = 0;
      h.host({
        endpointId: 'crm',
        retryPolicies: new RetryPolicies().setDefaultPolicy({ maxRetries: 2, baseDelayMs: 200 }),
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          if (e.customerId === 'D-1') throw new PermanentFailureError('customer record is corrupt');
          if (e.customerId === 'R-1' && attempts++ === 0) throw new Error('CRM busy');
        }),
      });
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'D-1', n: 1 });
      await pub.publish('OrderPlaced', { orderId: 'U-1' });
      await pub.publish('CustomerUpdated', { customerId: 'R-1', n: 1 });

      const [dead] = await rowsOf(store, 'crm', 'D-1', (r) => r.length === 1 && r[0]!.status === 'DeadLettered');
      assert.equal(dead!.deadLetterReason, 'Permanent failure: PermanentFailureError: customer record is corrupt');
      // The dead-letter notification is an ErrorResponse carrying DeadLetterErrorDescription.
      await expectHistory(store, dead!.eventId, ['EventRequest', 'ErrorResponse']);
      const [unsupported] = await rowsOf(store, 'crm', 'U-1', (r) => r.length === 1 && r[0]!.status === 'Unsupported');
      await expectHistory(store, unsupported!.eventId, ['EventRequest', 'UnsupportedResponse']);
      const [retried] = await rowsOf(store, 'crm', 'R-1', (r) => r.length === 1 && r[0]!.status === 'Completed');
      await expectHistory(store, retried!.eventId, ['ErrorResponse', 'EventRequest', 'ResolutionResponse', 'RetryRequest']);
      assert.deepEqual((await store.listAudits(retried!.eventId)).items.map((a) => a.type), ['Retry']);
      // DeadLettered and Unsupported count in the Failed column.
      await expectCounts(store, 'crm', { failed: 2, deadLettered: 1, unsupported: 1, completed: 1 });
    });
  });

  test('skip of a failed event -> Skipped, its sibling Completed; discard -> Skipped with the reason; handoff failed -> Failed', async () => {
    await withResolver(async (h, store) => {
      class RetiredVersion extends Error {
        override name = 'RetiredVersion';
      }
      h.host({
        endpointId: 'crm',
        classifier: classifier('Adapter', (e) => (e instanceof RetiredVersion ? 'Discard' : 'Retry')),
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e, ctx) => {
          if (e.customerId === 'S-1' && e.n === 1) throw new Error('CRM rejected the customer');
          if (e.customerId === 'X-1' && e.n === 1) throw new RetiredVersion('v1 customers are retired');
          if (e.customerId === 'P-2') ctx.markPendingHandoff('DMF import', 'job-2', 60_000);
        }),
      });
      h.deferredProcessor('crm');
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'S-1', n: 1 });
      await pub.publish('CustomerUpdated', { customerId: 'S-1', n: 2 });
      const blocked = await rowsOf(store, 'crm', 'S-1', (r) => statuses(r).join() === 'Deferred,Failed');
      const failed = blocked.find((r) => r.status === 'Failed')!;
      const sibling = blocked.find((r) => r.status === 'Deferred')!;
      await expectCounts(store, 'crm', { failed: 1, deferred: 1 });
      await h.managerCommand('crm', MessageType.SkipRequest, { eventId: failed.eventId, sessionId: 'S-1' });
      await rowsOf(store, 'crm', 'S-1', (r) => statuses(r).join() === 'Completed,Skipped');
      await expectHistory(store, failed.eventId, ['EventRequest', 'ErrorResponse', 'SkipRequest', 'SkipResponse']);
      await expectHistory(store, sibling.eventId, ['EventRequest', 'DeferralResponse', 'EventRequest', 'ResolutionResponse']);
      await expectCounts(store, 'crm', { skipped: 1, completed: 1 });

      // Discard: the SDK answers an enriched SkipResponse and the session goes on.
      await pub.publish('CustomerUpdated', { customerId: 'X-1', n: 1 });
      await pub.publish('CustomerUpdated', { customerId: 'X-1', n: 2 });
      const discarded = await rowsOf(store, 'crm', 'X-1', (r) => statuses(r).join() === 'Completed,Skipped');
      const skippedRow = discarded.find((r) => r.status === 'Skipped')!;
      assert.equal(skippedRow.errorText, 'RetiredVersion: v1 customers are retired Classified as Discard by Adapter.');
      assert.equal(skippedRow.errorType, 'RetiredVersion');
      await expectHistory(store, skippedRow.eventId, ['EventRequest', 'SkipResponse']);
      await expectCounts(store, 'crm', { skipped: 2, completed: 2 });

      await pub.publish('CustomerUpdated', { customerId: 'P-2', n: 1 });
      const [parked] = await rowsOf(store, 'crm', 'P-2', (r) => r.length === 1 && r[0]!.subStatus === 'Handoff');
      await expectCounts(store, 'crm', { skipped: 2, completed: 2, pending: 1, handoff: 1 });
      const handoff = new HandoffClient(h.client);
      try {
        await handoff.fail({ endpointId: 'crm', eventId: parked!.eventId, sessionId: 'P-2', messageId: parked!.requestMessageId ?? parked!.lastMessageId }, 'DMF job rejected 3 lines', 'DmfRejected');
      } finally {
        await handoff.close();
      }
      const [failedHandoff] = await rowsOf(store, 'crm', 'P-2', (r) => r.length === 1 && r[0]!.status === 'Failed');
      assert.equal(failedHandoff!.errorText, 'DMF job rejected 3 lines');
      assert.equal(failedHandoff!.subStatus, null);
      await expectHistory(store, parked!.eventId, ['EventRequest', 'PendingHandoffResponse', 'HandoffFailedRequest', 'ErrorResponse']);
      await expectCounts(store, 'crm', { skipped: 2, completed: 2, failed: 1 });
    });
  });
});

describe('edges: the row tells the truth after a refused or late command', () => {
  test('a RetryRequest arriving after a skip: the row stays Skipped, the retry is in history with a Comment audit, no Retry audit', async () => {
    await withResolver(async (h, store) => {
      const calls: number[] = [];
      h.host({
        endpointId: 'crm',
        retryPolicies: new RetryPolicies().setDefaultPolicy({ maxRetries: 1, baseDelayMs: 1500 }),
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          calls.push(e.n);
          throw new Error('CRM rejected the customer');
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'L-1', n: 1 });
      const [failed] = await rowsOf(store, 'crm', 'L-1', (r) => r.length === 1 && r[0]!.status === 'Failed');
      await h.managerCommand('crm', MessageType.SkipRequest, { eventId: failed!.eventId, sessionId: 'L-1' });
      await rowsOf(store, 'crm', 'L-1', (r) => r.length === 1 && r[0]!.status === 'Skipped');
      // The retry fires 1.5 s after the failure; the guard's Comment audit is written once its status write was decided.
      const comment = await eventually(async () => {
        const audits = (await store.listAudits(failed!.eventId)).items;
        return audits.find((a) => a.type === 'Comment');
      }, 'the Comment audit of the late retry', 20_000);
      assert.match(comment.comment ?? '', /^Ignored late RetryRequest .*already Skipped/);
      const [row] = await rowsOf(store, 'crm', 'L-1', () => true);
      assert.equal(row!.status, 'Skipped');
      await expectHistory(store, failed!.eventId, ['EventRequest', 'ErrorResponse', 'SkipRequest', 'SkipResponse', 'RetryRequest']);
      assert.deepEqual((await store.listAudits(failed!.eventId)).items.map((a) => a.type), ['Comment']);
      await expectCounts(store, 'crm', { skipped: 1 });
      assert.deepEqual(calls, [1]);
    });
  });

  test('commands that did not come from the Manager are refused: the Failed row and the blocked session stay as they were; history and audit say so', async () => {
    await withResolver(async (h, store) => {
      const calls: number[] = [];
      const host = h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          calls.push(e.n);
          throw new Error('CRM rejected the customer');
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'G-1', n: 1 });
      const [failed] = await rowsOf(store, 'crm', 'G-1', (r) => r.length === 1 && r[0]!.status === 'Failed');
      // Straight to the endpoint topic with a forged sender, bypassing the Manager topic.
      for (const type of [MessageType.SkipRequest, MessageType.ResubmissionRequest]) {
        await h.send('crm', {
          sessionId: 'G-1',
          body: eventBody('CustomerUpdated', { customerId: 'G-1', n: 9 }),
          props: { To: 'crm', From: 'shop', MessageType: type, EventId: failed!.eventId, EventTypeId: 'CustomerUpdated' },
        });
      }
      const audits = await eventually(async () => {
        const items = (await store.listAudits(failed!.eventId)).items.filter((a) => a.type === 'CommandRefused');
        return items.length === 2 ? items : undefined;
      }, 'two CommandRefused audits', 20_000);
      assert.deepEqual(audits.map((a) => a.comment!.split(': ')[1]!.split(' ')[0]).sort(), ['ResubmissionRequest', 'SkipRequest']);
      for (const a of audits) assert.equal(a.auditor, 'crm');
      const [row] = await rowsOf(store, 'crm', 'G-1', () => true);
      assert.equal(row!.status, 'Failed');
      assert.equal(row!.errorText, 'CRM rejected the customer');
      await expectHistory(store, failed!.eventId, ['EventRequest', 'ErrorResponse', 'SkipRequest', 'ErrorResponse', 'ResubmissionRequest', 'ErrorResponse']);
      await expectCounts(store, 'crm', { failed: 1 });
      assert.deepEqual(calls, [1]);
      const refusals = await h.awaitDeadLetters('crm', 'crm');
      assert.ok(refusals.every((d) => d.deadLetterReason === 'CommandRefused'));
      await host.stop();
      assert.equal((await h.sessionState('crm', 'G-1')).BlockedByEventId, failed!.eventId);
    });
  });

  test('handoff commands for an event that is not the pending handoff: a completion is refused (row back to Skipped), a failure is answered Failed with its own type', async () => {
    await withResolver(async (h, store) => {
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (_e, ctx) => {
          ctx.markPendingHandoff('DMF import', 'job-9', 60_000);
        }),
      });
      const pub = h.publisher('shop');
      const skippedHandoff = async (sessionId: string) => {
        await pub.publish('CustomerUpdated', { customerId: sessionId, n: 1 });
        const [parked] = await rowsOf(store, 'crm', sessionId, (r) => r.length === 1 && r[0]!.subStatus === 'Handoff');
        // The operator skips the handoff: the session is released, the row Skipped.
        await h.managerCommand('crm', MessageType.SkipRequest, { eventId: parked!.eventId, sessionId });
        await rowsOf(store, 'crm', sessionId, (r) => r.length === 1 && r[0]!.status === 'Skipped');
        return { endpointId: 'crm', eventId: parked!.eventId, sessionId, messageId: parked!.requestMessageId ?? parked!.lastMessageId, eventTypeId: 'CustomerUpdated' };
      };
      const late = await skippedHandoff('K-1');
      const lateFail = await skippedHandoff('K-2');
      const handoff = new HandoffClient(h.client);
      try {
        // The external system reports afterwards: too late for the session, which no longer waits for it.
        await handoff.complete(late, { importedLines: 12 });
        await handoff.fail(lateFail, 'DMF job rejected 3 lines', 'DmfRejected');
      } finally {
        await handoff.close();
      }
      const [refusal] = await eventually(async () => {
        const items = (await store.listAudits(late.eventId)).items.filter((a) => a.type === 'CommandRefused');
        return items.length === 1 ? items : undefined;
      }, 'the CommandRefused audit', 20_000);
      assert.match(refusal!.comment ?? '', /is not the pending handoff of session K-1 \(the session is not blocked\); the row was put back to Skipped$/);
      const [kept] = await rowsOf(store, 'crm', 'K-1', (r) => r.length === 1 && r[0]!.status === 'Skipped');
      assert.equal(kept!.subStatus, null);
      await expectHistory(store, late.eventId, ['EventRequest', 'PendingHandoffResponse', 'SkipRequest', 'SkipResponse', 'HandoffCompletedRequest', 'ErrorResponse']);

      const [failed] = await rowsOf(store, 'crm', 'K-2', (r) => r.length === 1 && r[0]!.status === 'Failed');
      assert.equal(failed!.errorText, 'DMF job rejected 3 lines');
      assert.equal(failed!.errorType, 'DmfRejected');
      await expectHistory(store, lateFail.eventId, ['EventRequest', 'PendingHandoffResponse', 'SkipRequest', 'SkipResponse', 'HandoffFailedRequest', 'ErrorResponse']);
      await expectCounts(store, 'crm', { skipped: 1, failed: 1 });
    });
  });

  test('a replay gap: the notice is in the history and audit of the pass-end event, whose row stays Completed; the lost event stays Deferred', async () => {
    await withResolver(async (h, store) => {
      h.host({
        endpointId: 'crm',
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          if (e.n === 1 && !e.fixed) throw new Error('CRM rejected the customer');
        }),
      });
      const pub = h.publisher('shop');
      for (const n of [1, 2, 3]) await pub.publish('CustomerUpdated', { customerId: 'Q-1', n });
      const blocked = await rowsOf(store, 'crm', 'Q-1', (r) => statuses(r).join() === 'Deferred,Deferred,Failed');
      const failed = blocked.find((r) => r.status === 'Failed')!;
      // The last parked copy is lost on the Deferred subscription.
      const parked = await h.client.acceptSession('crm', 'Deferred', 'Q-1');
      let lostEventId = '';
      try {
        const got = [];
        while (got.length < 2) got.push(...(await parked.receiveMessages(2 - got.length, { maxWaitTimeInMs: 2000 })));
        for (const m of got) {
          if (m.applicationProperties?.DeferralSequence === 1) {
            lostEventId = String(m.applicationProperties.EventId);
            await parked.deadLetterMessage(m, { deadLetterReason: 'test', deadLetterErrorDescription: 'lost on purpose' });
          } else await parked.abandonMessage(m);
        }
      } finally {
        await parked.close();
      }
      h.deferredProcessor('crm');
      await h.managerCommand(
        'crm',
        MessageType.ResubmissionRequest,
        { eventId: failed.eventId, sessionId: 'Q-1', eventTypeId: 'CustomerUpdated' },
        eventBody('CustomerUpdated', { customerId: 'Q-1', n: 1, fixed: true }),
      );
      const replayed = blocked.find((r) => r.status === 'Deferred' && r.eventId !== lostEventId)!;
      const [gap] = await eventually(async () => {
        const items = (await store.listAudits(replayed.eventId)).items.filter((a) => a.type === 'ReplayGap');
        return items.length === 1 ? items : undefined;
      }, 'the ReplayGap audit', 20_000);
      assert.match(gap!.comment ?? '', /parked sequence 1 of session Q-1 did not come back/);
      const rows = await rowsOf(store, 'crm', 'Q-1', (r) => statuses(r).join() === 'Completed,Completed,Deferred');
      assert.equal(rows.find((r) => r.status === 'Deferred')!.eventId, lostEventId);
      await expectHistory(store, replayed.eventId, ['EventRequest', 'DeferralResponse', 'EventRequest', 'ErrorResponse', 'ResolutionResponse']);
      await expectCounts(store, 'crm', { completed: 2, deferred: 1 });
    });
  });
});
