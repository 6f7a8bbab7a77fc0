// Replay cursor gaps (issue 12 item 6): whatever happens to a parked or replayed copy, the session's replay cursor
// reaches the end of the pass, so a session never stays draining with every new message parked behind it. Each
// path ends with a positive signal: a new event published afterwards is handled, not parked.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { eventBody, MessageType, Subscription } from '@nimbus/sdk/contract';
import { MessageAlreadyDeadLetteredError, PermanentFailureError } from '@nimbus/sdk';
import { HandlerRegistry } from '@nimbus/sdk';
import type { PipelineBehavior } from '@nimbus/sdk';
import type { Harness } from './harness.ts';
import { eventually, storyOf, withHarness } from './harness.ts';

type Customer = { customerId: string; n: number; fixed?: boolean };

/** crm fails E1 until it is resubmitted fixed; every other event succeeds. */
const handlers = () =>
  new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
    if (e.n === 1 && !e.fixed) throw new Error('CRM rejected the customer');
  });

/** Publishes E1..En on `session` and waits until E1 failed and the rest are parked; returns E1's id and the copies' ids. */
async function blockWithParked(
  h: Harness,
  session: string,
  n: number,
): Promise<{ e1: string; ids: string[] }> {
  const pub = h.publisher('shop');
  for (let i = 1; i <= n; i++) await pub.publish('CustomerUpdated', { customerId: session, n: i });
  const first = await h.resolver(session, 2 * n);
  assert.deepEqual(storyOf(first).responses, [
    'ErrorResponse:E1',
    ...Array.from({ length: n - 1 }, (_, i) => `DeferralResponse:E${i + 2}`),
  ]);
  const requests = first.filter((r) => r.type === 'EventRequest');
  return { e1: String(requests[0]!.props.EventId), ids: requests.map((r) => r.messageId) };
}

const resubmitFixed = (h: Harness, session: string, e1: string) =>
  h.managerCommand(
    'crm',
    MessageType.ResubmissionRequest,
    { eventId: e1, sessionId: session, eventTypeId: 'CustomerUpdated' },
    eventBody('CustomerUpdated', { customerId: session, n: 1, fixed: true }),
  );

/** The positive signal: a new event of the session is handled (answered Resolution), not parked. */
async function newEventIsHandled(h: Harness, session: string, n: number): Promise<void> {
  await h.publisher('shop').publish('CustomerUpdated', { customerId: session, n });
  const records = await h.resolver(session, 2, 20_000);
  assert.deepEqual(storyOf(records).responses, [`ResolutionResponse:E${n}`]);
}

/** Takes the parked copies of `session` off the Deferred subscription: dead-letters those `lose` picks, abandons the rest. */
async function loseParked(
  h: Harness,
  session: string,
  count: number,
  lose: (m: ServiceBusReceivedMessage) => boolean,
) {
  const receiver = await h.client.acceptSession('crm', Subscription.Deferred, session);
  try {
    const got: ServiceBusReceivedMessage[] = [];
    while (got.length < count)
      got.push(...(await receiver.receiveMessages(count - got.length, { maxWaitTimeInMs: 2000 })));
    for (const m of got) {
      if (lose(m))
        await receiver.deadLetterMessage(m, {
          deadLetterReason: 'test',
          deadLetterErrorDescription: 'lost on purpose',
        });
      else await receiver.abandonMessage(m);
    }
  } finally {
    await receiver.close();
  }
}

describe('replay cursor gaps never leave a session draining', () => {
  test('the last replayed copy dead-lettered by a behaviour still ends the drain', async () => {
    await withHarness(async (h) => {
      let e3Copy = '';
      const rejectE3Copy: PipelineBehavior = async (ctx, next) => {
        if (ctx.message.messageId === e3Copy) {
          await ctx.deadLetter('Tenant unknown');
          throw new MessageAlreadyDeadLetteredError('Tenant unknown');
        }
        await next();
      };
      h.host({ endpointId: 'crm', handlers: handlers(), behaviors: [rejectE3Copy] });
      h.deferredProcessor('crm');
      const { e1, ids } = await blockWithParked(h, 'RG-1', 3);
      e3Copy = `${ids[2]}~parked~replayed`;
      await resubmitFixed(h, 'RG-1', e1);
      const replay = await h.resolver('RG-1', 6);
      assert.deepEqual(storyOf(replay).responses, [
        'ResolutionResponse:E1',
        'ResolutionResponse:E2',
        'ErrorResponse:E3',
      ]);
      assert.equal(replay.find((r) => r.type === 'ErrorResponse')!.props.DeadLetterReason, 'Tenant unknown');
      await newEventIsHandled(h, 'RG-1', 4);
    });
  });

  test('a behaviour that throws on the last copy of a pass still asks for the next pass (a message parked during the drain is replayed)', async () => {
    await withHarness(async (h) => {
      let e2Copy = '';
      const boomOnE2Copy: PipelineBehavior = async (ctx, next) => {
        if (ctx.message.messageId === e2Copy) throw new Error('service mode: endpoint paused');
        await next();
      };
      const host = h.host({ endpointId: 'crm', handlers: handlers(), behaviors: [boomOnE2Copy] });
      const { e1, ids } = await blockWithParked(h, 'RG-2', 2);
      e2Copy = `${ids[1]}~parked~replayed`;
      // Released while no deferred processor runs: the session is draining, so E3 parks behind E2.
      await resubmitFixed(h, 'RG-2', e1);
      assert.deepEqual(storyOf(await h.resolver('RG-2', 2)).responses, ['ResolutionResponse:E1']);
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'RG-2', n: 3 });
      assert.deepEqual(storyOf(await h.resolver('RG-2', 2)).responses, ['DeferralResponse:E3']);
      h.deferredProcessor('crm');
      const replay = await h.resolver('RG-2', 4, 20_000);
      assert.deepEqual(storyOf(replay).responses, ['ErrorResponse:E2', 'ResolutionResponse:E3']);
      assert.equal(
        replay.find((r) => r.type === 'ErrorResponse')!.props.DeadLetterReason,
        'Failed to handle message.',
      );
      await newEventIsHandled(h, 'RG-2', 4);
      await host.stop();
      const state = await h.sessionState('crm', 'RG-2');
      assert.deepEqual([state.NextReplaySequence, state.NextDeferralSequence], [2, 2]);
    });
  });

  test('a replayed copy that fails permanently and whose dead-letter is refused once is dead-lettered on its redelivery', async () => {
    await withHarness(async (h) => {
      // The fault: the first dead-letter of crm's session receivers fails (the host's client is the harness's).
      let refusals = 0;
      const accept = h.client.acceptNextSession.bind(h.client);
      h.client.acceptNextSession = (async (...args: Parameters<typeof accept>) => {
        const receiver = await accept(...args);
        const deadLetter = receiver.deadLetterMessage.bind(receiver);
        receiver.deadLetterMessage = async (...dl: Parameters<typeof deadLetter>) => {
          if (refusals++ === 0) throw new Error('broker refused the dead-letter (test fault)');
          return deadLetter(...dl);
        };
        return receiver;
      }) as typeof h.client.acceptNextSession;
      h.host({
        endpointId: 'crm',
        sessionConnection: 'shared',
        transientHold: { initialMs: 100 },
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          if (e.n === 1 && !e.fixed) throw new Error('CRM rejected the customer');
          if (e.n === 2) throw new PermanentFailureError('customer 2 cannot be imported');
        }),
      });
      h.deferredProcessor('crm');
      const { e1 } = await blockWithParked(h, 'RG-DL', 2);
      await resubmitFixed(h, 'RG-DL', e1);
      // The resubmission, E1 resolved, E2's replayed copy, and its notification once per delivery.
      const replay = await h.resolver('RG-DL', 5, 30_000);
      assert.deepEqual(storyOf(replay).responses, [
        'ResolutionResponse:E1',
        'ErrorResponse:E2',
        'ErrorResponse:E2',
      ]);
      assert.equal(refusals, 2, 'the dead-letter was asked for again on the redelivery');
      // Before: the cursor was written before the refused dead-letter, so the redelivery was completed as a copy
      // already handled - the Resolver said DeadLettered, the dead-letter queue was empty and the payload gone.
      const dead = await h.awaitDeadLetters('crm', 'crm');
      assert.deepEqual(
        dead.map((m) => m.deadLetterReason),
        ['Permanent failure: PermanentFailureError: customer 2 cannot be imported'],
      );
      await newEventIsHandled(h, 'RG-DL', 3);
    });
  });

  test('a message whose completion fails after it was parked is parked once, and the replay runs it once', async () => {
    await withHarness(async (h) => {
      // The fault: once armed, the next completion on crm's session receivers is refused (after the park's state
      // write, so the message comes back). The host's client is the harness's.
      let refuseNext = false;
      let refused = 0;
      const accept = h.client.acceptNextSession.bind(h.client);
      h.client.acceptNextSession = (async (...args: Parameters<typeof accept>) => {
        const receiver = await accept(...args);
        const complete = receiver.completeMessage.bind(receiver);
        receiver.completeMessage = async (...c: Parameters<typeof complete>) => {
          if (refuseNext) {
            refuseNext = false;
            refused++;
            throw new Error('broker refused the completion (test fault)');
          }
          return complete(...c);
        };
        return receiver;
      }) as typeof h.client.acceptNextSession;
      const runs: number[] = [];
      const host = h.host({
        endpointId: 'crm',
        sessionConnection: 'shared',
        transientHold: { initialMs: 100 },
        handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e) => {
          runs.push(e.n);
          if (e.n === 1 && !e.fixed) throw new Error('CRM rejected the customer');
        }),
      });
      h.deferredProcessor('crm');
      const pub = h.publisher('shop');
      await pub.publish('CustomerUpdated', { customerId: 'RG-PK', n: 1 });
      const first = await h.resolver('RG-PK', 2);
      assert.deepEqual(storyOf(first).responses, ['ErrorResponse:E1']);
      refuseNext = true;
      await pub.publish('CustomerUpdated', { customerId: 'RG-PK', n: 2 });
      assert.deepEqual(storyOf(await h.resolver('RG-PK', 2)).responses, ['DeferralResponse:E2']);
      await eventually(() => (refused === 1 ? true : undefined), 'the completion refused', 15_000);
      await resubmitFixed(h, 'RG-PK', String(first.find((r) => r.type === 'EventRequest')!.props.EventId));
      // The resubmission, E1 resolved, E2's replayed copy and its answer.
      const replay = await h.resolver('RG-PK', 4, 20_000);
      assert.deepEqual(storyOf(replay).responses, ['ResolutionResponse:E1', 'ResolutionResponse:E2']);
      // Before: the redelivery parked E2 again (a second DeferralResponse, a second parked copy under sequence 1), and
      // the replay ran it twice: the records after this pass were E2's second copy and answer, not E3's.
      await newEventIsHandled(h, 'RG-PK', 3);
      assert.deepEqual(runs, [1, 1, 2, 3], 'E1, its resubmission, E2 once, E3');
      await host.stop();
      const state = await h.sessionState('crm', 'RG-PK');
      assert.deepEqual([state.NextReplaySequence, state.NextDeferralSequence], [1, 1]);
    });
  });

  test('a parked copy lost on the Deferred subscription is skipped at the end of the pass, with a ReplayGap notice', async () => {
    await withHarness(async (h) => {
      const host = h.host({ endpointId: 'crm', handlers: handlers() });
      const { e1 } = await blockWithParked(h, 'RG-3', 3);
      await loseParked(h, 'RG-3', 2, (m) => m.applicationProperties?.DeferralSequence === 1);
      await resubmitFixed(h, 'RG-3', e1);
      h.deferredProcessor('crm');
      const replay = await h.resolver('RG-3', 5, 20_000);
      assert.deepEqual(storyOf(replay).responses, [
        'ResolutionResponse:E1',
        'ErrorResponse:E2',
        'ResolutionResponse:E2',
      ]);
      const notice = replay.find((r) => r.type === 'ErrorResponse')!;
      assert.equal(notice.props.DeadLetterReason, 'ReplayGap');
      assert.match(
        String(notice.props.DeadLetterErrorDescription),
        /parked sequence 1 of session RG-3 did not come back/,
      );
      await newEventIsHandled(h, 'RG-3', 4);
      await host.stop();
      const state = await h.sessionState('crm', 'RG-3');
      assert.deepEqual([state.NextReplaySequence, state.NextDeferralSequence], [2, 2]);
    });
  });

  test('a parked copy lost in the middle of a pass is skipped with a ReplayGap notice on the copy after it', async () => {
    await withHarness(async (h) => {
      const host = h.host({ endpointId: 'crm', handlers: handlers() });
      // E2, E3, E4 parked with sequences 0, 1, 2; sequence 1 lost: the pass replays 0 and 2 (its end).
      const { e1 } = await blockWithParked(h, 'RG-MID', 4);
      await loseParked(h, 'RG-MID', 3, (m) => m.applicationProperties?.DeferralSequence === 1);
      await resubmitFixed(h, 'RG-MID', e1);
      h.deferredProcessor('crm');
      // The resubmission, two replayed copies and four responses. Before: E4's copy moved the cursor from 1 to 3
      // with no notice (the wait timed out with three responses), and E3 was lost untold.
      const replay = await h.resolver('RG-MID', 7, 20_000);
      assert.deepEqual(storyOf(replay).responses, [
        'ResolutionResponse:E1',
        'ResolutionResponse:E2',
        'ErrorResponse:E4',
        'ResolutionResponse:E4',
      ]);
      const notice = replay.find((r) => r.type === 'ErrorResponse')!;
      assert.equal(notice.props.DeadLetterReason, 'ReplayGap');
      assert.match(
        String(notice.props.DeadLetterErrorDescription),
        /^parked sequence 1 of session RG-MID did not come back ahead of sequence 2 /,
      );
      await newEventIsHandled(h, 'RG-MID', 5);
      await host.stop();
      const state = await h.sessionState('crm', 'RG-MID');
      assert.deepEqual([state.NextReplaySequence, state.NextDeferralSequence], [3, 3]);
    });
  });

  test('a pass that finds nothing (its only parked copy lost) ends with a marker that skips the gap', async () => {
    await withHarness(async (h) => {
      h.host({ endpointId: 'crm', handlers: handlers() });
      const { e1 } = await blockWithParked(h, 'RG-4', 2);
      await loseParked(h, 'RG-4', 1, () => true);
      await resubmitFixed(h, 'RG-4', e1);
      h.deferredProcessor('crm');
      // The resubmission, its answer, the marker (it reaches the Resolver like any message To = crm), the notice.
      const replay = await h.resolver('RG-4', 4, 20_000);
      assert.deepEqual(replay.map((r) => r.type).sort(), [
        'ErrorResponse',
        'ProcessDeferredRequest',
        'ResolutionResponse',
        'ResubmissionRequest',
      ]);
      const notice = replay.find((r) => r.type === 'ErrorResponse')!;
      assert.equal(notice.props.DeadLetterReason, 'ReplayGap');
      assert.equal(notice.props.EventId, e1);
      await newEventIsHandled(h, 'RG-4', 3);
    });
  });
});
