// Handoff commands name the handoff they settle, on the whole real path: an SDK host handing events off, the
// Resolver recording into Cosmos, the Manager sending from the rows, the bus HandoffClient sending from tokens - all
// on the embedded emulator and Cosmos, with the real clients.
//  - An event handed off (job 1), resubmitted by the operator and handed off again (job 2): job 1's late completion
//    must not settle job 2's handoff.
//  - The refusal of that completion puts the row back under the refusal notice's id, a message the session never
//    saw. Settling from the console must still work afterwards: an earlier attempt named the row's lastMessageId as
//    the handoff and was refused again and again.
//  - Job 1's late failure after job 2 has completed the handoff (the session released) must not turn Completed into
//    Failed: the session state remembers the released handoff's delivery, so the failure is refused.
//  - A block written by an older SDK (no BlockedByMessageId) is still settled by EventId.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeBody, MessageType, Prop, Topic, toWireProperties, WireText } from '@nimbus/sdk/contract';
import { createHandoffToken, HandlerRegistry, HandoffClient, type HandoffToken } from '@nimbus/sdk';
import { endProcessAfterResults, eventually, withHarness, type Harness } from '../../packages/sdk/e2e/harness.ts';
import { type HistoryEntry, type MessageStore, type StatusRowSummary } from '../../lib/store/index.ts';
import { startStoreAndResolver } from '../../resolver-worker/testHarness.ts';
import { Manager } from './manager.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
// The session-state reads take the session while the host may hold it: a refused acceptSession leaves the client's
// 60 s operation timer behind, which would keep the process up a minute after its results.
endProcessAfterResults();

type Customer = { customerId: string; n: number };

interface Stack {
  h: Harness;
  store: MessageStore;
  manager: Manager;
}

/** The SDK harness (emulator, topology, hosts) plus an embedded Cosmos store, a Resolver and a Manager on it. */
async function withStack(body: (s: Stack) => Promise<void>): Promise<void> {
  await withHarness(async (h) => {
    const { store, close } = await startStoreAndResolver(h.client, 'handoffmatch');
    const manager = new Manager({ store, client: h.client });
    try {
      await body({ h, store, manager });
    } finally {
      await manager.close();
      await close();
    }
  });
}

/** The crm row of `sessionId` once it satisfies `ok`. */
async function rowOf(store: MessageStore, sessionId: string, ok: (r: StatusRowSummary) => boolean, what: string): Promise<StatusRowSummary> {
  return eventually(async () => {
    const page = await store.listEvents({ endpointId: 'crm', sessionId });
    return page.items.find(ok);
  }, what, 20_000);
}

/** The endpoint's answer to command `commandId`, as the Resolver recorded it: whatever it is, it names the command. */
async function answerTo(store: MessageStore, eventId: string, commandId: string): Promise<HistoryEntry> {
  return eventually(async () => {
    const history = await store.listHistory(eventId);
    return history.items.find((i) => i.parentMessageId === commandId && i.messageType !== MessageType.HandoffCompletedRequest);
  }, `the answer to ${commandId}`, 20_000);
}

const handoffs = () => {
  const tokens: HandoffToken[] = [];
  const handlers = new HandlerRegistry().on<Customer>('CustomerUpdated', (_e, ctx) => {
    tokens.push(ctx.markPendingHandoff('ERP import', `job-${tokens.length + 1}`));
  });
  return { tokens, handlers };
};

/**
 * A host handing events off; an event of `customerId` handed off (job 1), resubmitted by the operator while job 1
 * runs, and handed off again by the resubmission (job 2).
 */
async function handOffTwice({ h, store, manager }: Stack, customerId: string) {
  const { tokens, handlers } = handoffs();
  h.host({ endpointId: 'crm', handlers });
  await h.publisher('shop').publish('CustomerUpdated', { customerId, n: 1 });
  const first = await rowOf(store, customerId, (r) => r.externalJobId === 'job-1', 'the handoff of job 1');
  const eventId = first.eventId;
  const resubmit = await manager.execute('crm', eventId, { kind: 'resubmit' }, 'operator');
  const second = await rowOf(store, customerId, (r) => r.externalJobId === 'job-2' && r.subStatus === 'Handoff', 'the handoff of job 2');
  assert.equal(second.parentMessageId, resubmit.messageId, 'job 2 was handed off by the resubmission');
  return { tokens, first, eventId, resubmit, second };
}

describe('handoff commands name the handoff they settle', () => {
  test("job 1's late completion does not settle job 2's handoff; the console still settles job 2 after the refusal", async () => {
    await withStack(async (stack) => {
      const { h, store, manager } = stack;
      const { tokens, first, eventId, resubmit, second } = await handOffTwice(stack, 'HM-1');

      // Job 1's agent reports late, with its own token.
      const handoff = new HandoffClient(h.client);
      try {
        const late = await handoff.complete(tokens[0]!, { imported: 1 });
        const answer = await answerTo(store, eventId, late);
        assert.equal(
          `${answer.messageType} ${answer.deadLetterReason ?? ''}`,
          `${MessageType.ErrorResponse} ${WireText.CommandRefused}`,
          "job 1's late completion was answered as if it settled job 2's handoff",
        );
        assert.match(answer.deadLetterErrorDescription ?? '', new RegExp(`made by message ${first.parentMessageId}, but session HM-1 is blocked by message ${resubmit.messageId}`));
      } finally {
        await handoff.close();
      }
      let state = await h.sessionState('crm', 'HM-1');
      assert.equal(state.BlockedByEventId, eventId, 'the session still waits for job 2');
      assert.equal(state.BlockedByMessageId, resubmit.messageId);

      // The refusal put the row back to job 2's handoff, under the notice's id: a message id the session never saw.
      const restored = await rowOf(store, 'HM-1', (r) => r.externalJobId === 'job-2' && r.subStatus === 'Handoff' && r.lastMessageId !== second.lastMessageId, 'the row put back after the refusal');
      assert.equal(restored.parentMessageId, resubmit.messageId, 'the restored row keeps the delivery that handed off');

      // The reverted attempt's naming - the row's lastMessageId as the handoff - is refused by the same rule, and the
      // row is put back under yet another notice id. That was the loop.
      const reverted = `reverted-naming-${restored.lastMessageId}`.slice(0, 100);
      const raw = h.client.createSender(Topic.Manager);
      await raw.sendMessages({
        messageId: reverted,
        sessionId: 'HM-1',
        body: Buffer.from(encodeBody({}), 'utf8'),
        applicationProperties: toWireProperties({
          [Prop.To]: 'crm',
          [Prop.MessageType]: MessageType.HandoffCompletedRequest,
          [Prop.EventId]: eventId,
          [Prop.EventTypeId]: 'CustomerUpdated',
          [Prop.ParentMessageId]: restored.lastMessageId,
          [Prop.HandedOffByMessageId]: restored.lastMessageId,
          [Prop.RetryCount]: 0,
        }),
      });
      await raw.close();
      assert.equal((await answerTo(store, eventId, reverted)).deadLetterReason, WireText.CommandRefused);
      const again = await rowOf(store, 'HM-1', (r) => r.subStatus === 'Handoff' && r.lastMessageId !== restored.lastMessageId && r.lastMessageId !== reverted, 'the row put back after the second refusal');

      // The console settles job 2 from the row as it is now (the Agent API and MCP name the same lastMessageId).
      const settled = await manager.execute('crm', eventId, { kind: 'handoffComplete', messageId: again.lastMessageId, result: { imported: 2 } }, 'operator');
      const resolution = await answerTo(store, eventId, settled.messageId);
      assert.equal(resolution.messageType, MessageType.ResolutionResponse, `the console's completion was answered ${resolution.messageType} ${resolution.deadLetterErrorDescription ?? ''}`);
      await rowOf(store, 'HM-1', (r) => r.status === 'Completed', 'the event Completed');
      state = await h.sessionState('crm', 'HM-1');
      assert.equal(state.BlockedByEventId, null, 'the session is released');
    });
  });

  test("job 1's late failure after job 2 completed the handoff is refused: the event stays Completed", async () => {
    await withStack(async (stack) => {
      const { h, store } = stack;
      const { tokens, first, eventId } = await handOffTwice(stack, 'HM-3');

      const handoff = new HandoffClient(h.client);
      try {
        // Job 2 completes: the session is released and the event Completed.
        const completion = await handoff.complete(tokens[1]!, { imported: 2 });
        assert.equal((await answerTo(store, eventId, completion)).messageType, MessageType.ResolutionResponse);
        await rowOf(store, 'HM-3', (r) => r.status === 'Completed', 'the event Completed by job 2');

        // Job 1's agent then reports its failure, late, with its own token.
        const late = await handoff.fail(tokens[0]!, 'ERP import timed out', 'ErpTimeout');
        const answer = await answerTo(store, eventId, late);
        assert.equal(
          `${answer.messageType} ${answer.deadLetterReason ?? ''}`,
          `${MessageType.ErrorResponse} ${WireText.CommandRefused}`,
          "job 1's late failure was answered as a failure of the event job 2 completed",
        );
        assert.match(
          answer.deadLetterErrorDescription ?? '',
          new RegExp(`handoff of event ${eventId} made by message ${first.parentMessageId} is no longer pending`),
        );
      } finally {
        await handoff.close();
      }
      const row = await rowOf(store, 'HM-3', (r) => r.eventId === eventId, 'the row after the refusal');
      assert.equal(row.status, 'Completed', 'the refused failure left the completed row alone');
      const state = await h.sessionState('crm', 'HM-3');
      assert.equal(state.BlockedByEventId, null, 'the refusal leaves the session released');
    });
  });

  test('a block an older SDK wrote (no BlockedByMessageId) is settled by EventId, whatever the command names', async () => {
    await withStack(async ({ h, store }) => {
      h.host({ endpointId: 'crm', handlers: handoffs().handlers });
      // The session state as an SDK before BlockedByMessageId wrote it: blocked by an event's handoff, nothing else.
      const receiver = await h.client.acceptSession('crm', 'crm', 'HM-2');
      try {
        const older = { BlockedByEventId: 'evt-older', DeferredSequenceNumbers: [], DeferredCount: 0, NextDeferralSequence: 0 };
        await receiver.setSessionState(Buffer.from(JSON.stringify(older), 'utf8'));
      } finally {
        await receiver.close();
      }
      const token = createHandoffToken({ endpointId: 'crm', eventId: 'evt-older', sessionId: 'HM-2', messageId: 'delivery-of-older-sdk', eventTypeId: 'CustomerUpdated' });
      const handoff = new HandoffClient(h.client);
      try {
        const command = await handoff.complete(token, { imported: 3 });
        const answer = await answerTo(store, 'evt-older', command);
        assert.equal(answer.messageType, MessageType.ResolutionResponse, `answered ${answer.messageType} ${answer.deadLetterErrorDescription ?? ''}`);
      } finally {
        await handoff.close();
      }
      const state = await h.sessionState('crm', 'HM-2');
      assert.equal(state.BlockedByEventId, null, 'the older block is released');
    });
  });
});
