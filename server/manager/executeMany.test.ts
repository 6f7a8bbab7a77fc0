// Manager.executeMany on the real stack (emulator, embedded Cosmos, real clients): a bulk operation's lot gets, per
// event, the answer execute() gives (sent, duplicate, 409 refused, 404 unknown), whatever path the event took (the
// lot's bulk calls, or the one-event path for what the lot cannot settle); each event gets one command on the wire
// and a receipt naming the operation; repeating the lot sends nothing. A lot whose send fails has every claim put
// back and audited (503 each), and the retry sends each event once. A caller whose guard says it may no longer send
// (a bulk job's runner whose lease ended) gets nothing sent, on either path: each event answered SendWithheld, its
// claim undone and audited as a failed send's is (a row moved since, or a claim past WITHHELD_UNDO_MS, left alone).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusClient, ServiceBusMessageBatch, ServiceBusSender } from '@azure/service-bus';
import { MessageType as T, Topic } from '@nimbus/sdk/contract';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { msg } from '../../lib/store/testing/fixtures.ts';
import type { Settled } from '../../lib/store/index.ts';
import { HttpError } from '../http.ts';
import { drainSession } from '../testing/sessionWire.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { isSendWithheld, Manager, WITHHELD_UNDO_MS, type CommandResult, type CommandTarget } from './manager.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
let stack: ConsoleTestStack;
let manager: Manager;

before(async () => {
  stack = await startConsoleTestStack('executemany');
  manager = new Manager({ store: stack.store, client: stack.serviceBus.client });
});

after(async () => {
  await manager?.close();
  await stack?.close();
});

/** A Failed event (request with a payload, then an error) in its own session `S-<eventId>`. */
async function seedFailed(eventId: string): Promise<void> {
  const sessionId = `S-${eventId}`;
  const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId, eventTypeId: 'OrderPlaced', payload: { eventId } });
  const error = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId, parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
  for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
}

/**
 * The commands that reached the endpoint's subscription for these events (received and deleted): ids per event.
 * Each session is read to an end marker (server/testing/sessionWire.ts), not to a receive left empty for 1.5 s.
 */
async function onTheWire(eventIds: string[]): Promise<Map<string, string[]>> {
  const seen = new Map<string, string[]>();
  for (const eventId of eventIds) {
    const got = await drainSession(stack.serviceBus.client, EP, `S-${eventId}`);
    if (got.length > 0) seen.set(eventId, got.map((m) => String(m.messageId)));
  }
  return seen;
}

function answer(s: Settled<CommandResult> | undefined): string {
  if (!s) return 'missing';
  if (s.ok) return s.value.outcome;
  return s.error instanceof HttpError ? String(s.error.status) : `error ${String(s.error)}`;
}

/**
 * The real client, whose Manager-topic sender (the real one, against the emulator) makes batches that take one
 * message each - as a lot of large payloads fills a 256 KB batch - and calls `sent` when a batch's send returns.
 */
function oneMessageBatches(client: ServiceBusClient, sent: () => void): ServiceBusClient {
  const real = new WeakMap<object, ServiceBusMessageBatch>();
  const wrapSender = (sender: ServiceBusSender): ServiceBusSender =>
    new Proxy(sender, {
      get(target, name) {
        if (name === 'createMessageBatch') {
          return async (...args: Parameters<ServiceBusSender['createMessageBatch']>) => {
            const batch = await target.createMessageBatch(...args);
            const one = new Proxy(batch, {
              get(b, key) {
                if (key === 'tryAddMessage') return (...m: Parameters<ServiceBusMessageBatch['tryAddMessage']>) => b.count === 0 && b.tryAddMessage(...m);
                const value: unknown = Reflect.get(b, key, b);
                return typeof value === 'function' ? value.bind(b) : value;
              },
            });
            real.set(one, batch);
            return one;
          };
        }
        if (name === 'sendMessages') {
          return async (messages: Parameters<ServiceBusSender['sendMessages']>[0], options?: Parameters<ServiceBusSender['sendMessages']>[1]) => {
            await target.sendMessages(real.get(messages as object) ?? messages, options);
            sent();
          };
        }
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  return new Proxy(client, {
    get(target, name) {
      if (name === 'createSender') return (...args: Parameters<ServiceBusClient['createSender']>) => wrapSender(target.createSender(...args));
      const value: unknown = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('Manager.executeMany', () => {
  test("each event answered as execute() answers it; one command each on the wire; receipts name the operation; a repeat sends nothing", async () => {
    const ids = ['m-0', 'm-1', 'm-2', 'm-3', 'm-4', 'm-5'];
    for (const id of ids) await seedFailed(id);
    // m-3 was already commanded (a click before the job); m-4 was resolved after the selection was frozen.
    const earlier = await manager.execute(EP, 'm-3', { kind: 'resubmit' }, 'clicker');
    const m4 = (await stack.store.getStatusRow(EP, 'm-4', 'S-m-4'))!;
    await stack.store.writeStatus(msg(T.ResolutionResponse, { endpointId: EP, eventId: 'm-4', sessionId: 'S-m-4', parentMessageId: m4.lastMessageId }));
    const targets: CommandTarget[] = [
      { endpointId: EP, eventId: 'm-0', sessionId: 'S-m-0' },
      { endpointId: EP, eventId: 'm-1', sessionId: 'S-m-1' },
      { endpointId: EP, eventId: 'm-2' }, // no session known (a job frozen before sessions were stored)
      { endpointId: EP, eventId: 'm-3', sessionId: 'S-m-3' },
      { endpointId: EP, eventId: 'm-4', sessionId: 'S-m-4' },
      { endpointId: EP, eventId: 'no-such-event', sessionId: 'S-x' },
      { endpointId: EP, eventId: 'm-5', sessionId: 'wrong-session' }, // found through its history
      { endpointId: EP, eventId: 'm-0', sessionId: 'S-m-0' }, // named twice: the second finds the first's receipt
    ];
    const origin = { operationId: '00000000-0000-4000-8000-000000000001' };
    const results = await manager.executeMany(targets, { kind: 'resubmit' }, 'tester', origin);
    assert.deepEqual(results.map(answer), ['sent', 'sent', 'sent', 'duplicate', '409', '404', 'sent', 'duplicate']);
    assert.equal(results[3]!.ok && results[3]!.value.messageId, earlier.messageId);

    for (const [i, r] of results.entries()) {
      if (!r.ok || r.value.outcome !== 'sent') continue;
      const row = await stack.store.getStatusRow(EP, targets[i]!.eventId, `S-${targets[i]!.eventId}`);
      assert.deepEqual([row?.status, row?.lastMessageId], ['Pending', r.value.messageId], `${targets[i]!.eventId} is claimed by its command`);
      const receipt = await stack.store.getAudit(targets[i]!.eventId, r.value.messageId);
      assert.equal(receipt?.type, 'Resubmit');
      assert.equal(receipt?.comment, `bulk operation ${origin.operationId}`);
      assert.equal((JSON.parse(receipt!.data!) as { operationId: string }).operationId, origin.operationId);
    }

    const wire = await onTheWire(ids);
    const sentIds = new Map(results.filter((r) => r.ok).map((r) => [(r as { value: CommandResult }).value.eventId, (r as { value: CommandResult }).value.messageId]));
    for (const id of ['m-0', 'm-1', 'm-2', 'm-3', 'm-5']) assert.deepEqual(wire.get(id), [sentIds.get(id)], `${id}: one command`);
    assert.equal(wire.has('m-4'), false, 'the resolved event got no command');

    const again = await manager.executeMany(targets, { kind: 'resubmit' }, 'tester', origin);
    assert.deepEqual(again.map(answer), ['duplicate', 'duplicate', 'duplicate', 'duplicate', '409', '404', 'duplicate', 'duplicate']);
    assert.equal((await onTheWire(ids)).size, 0, 'the repeat sent nothing');
  });

  // Before, a withheld send left its claim: the event showed Pending though nothing was sent, a repeat was told for
  // CLAIM_GRACE_MS that it was being sent right now, and nothing in the event's trail said why. And an event on the
  // one-event path was read and claimed afresh though the guard had already said no (the claim then undone).
  test('a caller that may no longer send gets nothing sent: the lot\'s claims undone and audited, the one-event path claims nothing; a repeat sent at once', async () => {
    const ids = ['w-0', 'w-1', 'w-2', 'w-3'];
    for (const id of ids) await seedFailed(id);
    const before = await Promise.all(ids.map((id) => stack.store.getStatusRow(EP, id, `S-${id}`)));
    const targets: CommandTarget[] = [
      { endpointId: EP, eventId: 'w-0', sessionId: 'S-w-0' },
      { endpointId: EP, eventId: 'w-1', sessionId: 'S-w-1' },
      { endpointId: EP, eventId: 'w-2' }, // the one-event path (no session known)
      { endpointId: EP, eventId: 'w-3', sessionId: 'wrong-session' }, // the lot's own one-event path (no row there)
    ];
    let asked = 0;
    const origin = { operationId: '00000000-0000-4000-8000-000000000003', mayStillSend: () => (asked++, false) };
    const results = await manager.executeMany(targets, { kind: 'resubmit' }, 'tester', origin);
    assert.deepEqual(results.map((r) => !r.ok && isSendWithheld(r.error)), [true, true, true, true], 'each event answered SendWithheld, not 503');
    assert.ok(asked >= 2, 'asked by the lot and by the one-event path');
    for (const [i, id] of ids.entries()) {
      const row = await stack.store.getStatusRow(EP, id, `S-${id}`);
      assert.deepEqual([row?.status, row?.lastMessageId], ['Failed', before[i]!.lastMessageId], `${id}: the event is as it was`);
      const audits = (await stack.store.listAudits(id)).items;
      if (i >= 2) {
        assert.equal(row?.updatedAt, before[i]!.updatedAt, `${id}: never claimed`);
        assert.deepEqual(audits.map((a) => a.type), [], `${id}: nothing to audit - no claim was made`);
        continue;
      }
      assert.deepEqual(audits.map((a) => a.type), ['CommandNotSent'], `${id}: its claim undone and audited, no receipt`);
      assert.match(audits[0]!.comment ?? '', new RegExp(`withheld - the lease of bulk operation ${origin.operationId} ended before the send; the event was put back to Failed`));
      const { messageId, ...data } = JSON.parse(audits[0]!.data!) as { messageId: string };
      assert.deepEqual(data, { messageType: 'ResubmissionRequest', sessionId: `S-${id}`, claim: 'restored', withheld: true });
      assert.match(messageId, /\S/);
      assert.equal(audits[0]!.data!.includes('operationId'), false, 'the entry does not read as the job having acted');
    }
    assert.equal((await onTheWire(ids)).size, 0, 'nothing was sent');
    // The event is as it was: a repeat claims it afresh and sends at once (not 409 "being sent right now").
    const repeat = await manager.execute(EP, 'w-0', { kind: 'resubmit' }, 'clicker');
    assert.equal(repeat.outcome, 'sent');
    assert.deepEqual((await onTheWire(['w-0'])).get('w-0'), [repeat.messageId], 'the repeat went out once');
  });

  // Before, the guard was asked once per lot: a lot sent as several Service Bus batches (a hundred resubmits of a few
  // KB each pass a 256 KB batch) went on sending its later batches after the guard turned false while the first
  // batch's send stalled - after a successor had cancelled, every one with a receipt naming the job.
  test('a lot sent as several batches asks the guard before each: the batches after it turns false are withheld, their claims undone', async () => {
    const ids = ['b-0', 'b-1', 'b-2'];
    for (const id of ids) await seedFailed(id);
    const before = await Promise.all(ids.map((id) => stack.store.getStatusRow(EP, id, `S-${id}`)));
    // The real sender, its batches holding one message each; the guard turns false once the first batch's send
    // returns (the caller's lease ended while it was under way).
    let fenced = false;
    let sends = 0;
    const client = oneMessageBatches(stack.serviceBus.client, () => {
      sends++;
      fenced = true;
    });
    const batched = new Manager({ store: stack.store, client });
    try {
      const origin = { operationId: '00000000-0000-4000-8000-000000000005', mayStillSend: () => !fenced };
      const results = await batched.executeMany(ids.map((eventId) => ({ endpointId: EP, eventId, sessionId: `S-${eventId}` })), { kind: 'resubmit' }, 'tester', origin);
      assert.equal(sends, 1, 'one batch went to the broker');
      assert.equal(answer(results[0]), 'sent', 'the batch handed over before the guard said no lands');
      assert.deepEqual(results.slice(1).map((r) => !r.ok && isSendWithheld(r.error)), [true, true], 'the later batches answered SendWithheld');
      for (const [i, id] of ids.entries()) {
        if (i === 0) continue;
        const row = await stack.store.getStatusRow(EP, id, `S-${id}`);
        assert.deepEqual([row?.status, row?.lastMessageId], ['Failed', before[i]!.lastMessageId], `${id}: the claim is undone`);
        const audits = (await stack.store.listAudits(id)).items;
        assert.deepEqual(audits.map((a) => [a.type, (JSON.parse(a.data!) as { withheld?: boolean }).withheld]), [['CommandNotSent', true]], `${id}: audited withheld, no receipt`);
      }
      const wire = await onTheWire(ids);
      assert.deepEqual([...wire.keys()], ['b-0'], 'only the first batch reached the endpoint');
    } finally {
      await batched.close();
    }
  });

  test('a withheld send leaves alone a row moved since its claim, and a claim older than WITHHELD_UNDO_MS', async () => {
    const ids = ['wm-0', 'wo-0'];
    for (const id of ids) await seedFailed(id);
    // wm-0: between the claim and the guard the endpoint answered the command (the Resolver recorded its error).
    const store = new Proxy(stack.store, {
      get(target, name) {
        const value: unknown = Reflect.get(target, name, target);
        if (name !== 'writeStatuses') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: Parameters<typeof target.writeStatuses>) => {
          const written = await target.writeStatuses(...args);
          for (const w of args[0].filter((w) => w.input.eventId === 'wm-0')) {
            const error = msg(T.ErrorResponse, { endpointId: EP, eventId: 'wm-0', sessionId: 'S-wm-0', parentMessageId: w.input.messageId, errorType: 'E', errorText: 'boom again' });
            await target.recordOutcome({ history: { ...error, enqueuedAt: new Date().toISOString() } as never, status: error });
          }
          return written;
        };
      },
    });
    // wo-0: the caller stalled past WITHHELD_UNDO_MS between its claim and the guard (its clock moves on when asked).
    let skew = 0;
    const stalled = new Manager({ store, client: stack.serviceBus.client, now: () => Date.now() + skew });
    try {
      const origin = { operationId: '00000000-0000-4000-8000-000000000004' };
      const moved = await stalled.executeMany([{ endpointId: EP, eventId: 'wm-0', sessionId: 'S-wm-0' }], { kind: 'skip' }, 'tester', { ...origin, mayStillSend: () => false });
      assert.ok(!moved[0]!.ok && isSendWithheld(moved[0]!.error));
      const row = await stack.store.getStatusRow(EP, 'wm-0', 'S-wm-0');
      assert.deepEqual([row?.status, row?.errorText], ['Failed', 'boom again'], 'wm-0: the row the Resolver moved is left as it is');
      const movedAudit = (await stack.store.listAudits('wm-0')).items;
      assert.deepEqual(movedAudit.map((a) => [a.type, (JSON.parse(a.data!) as { claim: string }).claim]), [['CommandNotSent', 'moved']]);

      const old = await stalled.executeMany([{ endpointId: EP, eventId: 'wo-0', sessionId: 'S-wo-0' }], { kind: 'skip' }, 'tester', { ...origin, mayStillSend: () => ((skew = WITHHELD_UNDO_MS), false) });
      assert.ok(!old[0]!.ok && isSendWithheld(old[0]!.error));
      const claim = await stack.store.getStatusRow(EP, 'wo-0', 'S-wo-0');
      assert.equal(claim?.status, 'Pending', 'wo-0: the claim stays (another replica may have re-sent it by now)');
      const oldAudit = (await stack.store.listAudits('wo-0')).items;
      assert.deepEqual(oldAudit.map((a) => [a.type, (JSON.parse(a.data!) as { claim: string }).claim]), [['CommandNotSent', 'kept']]);
      // This process knows nothing was sent: its repeat re-sends the claim (same MessageId) at once.
      const repeat = await stalled.execute(EP, 'wo-0', { kind: 'skip' }, 'clicker');
      assert.deepEqual([repeat.outcome, repeat.messageId], ['sent', claim?.lastMessageId]);
      assert.equal((await onTheWire(['wm-0'])).size, 0, 'wm-0: nothing was sent');
      assert.deepEqual((await onTheWire(['wo-0'])).get('wo-0'), [repeat.messageId], 'wo-0: sent once, by the repeat');
    } finally {
      await stalled.close();
    }
  });

  test('a lot whose send fails: every claim put back and audited (503 each); the retry sends each once', async () => {
    const ids = ['f-0', 'f-1', 'f-2'];
    for (const id of ids) await seedFailed(id);
    const targets = ids.map((eventId) => ({ endpointId: EP, eventId, sessionId: `S-${eventId}` }));
    const before = await Promise.all(targets.map((t) => stack.store.getStatusRow(EP, t.eventId, t.sessionId)));
    const origin = { operationId: '00000000-0000-4000-8000-000000000002' };
    await stack.serviceBus.admin.deleteTopic(Topic.Manager);
    try {
      const results = await manager.executeMany(targets, { kind: 'skip' }, 'tester', origin);
      assert.deepEqual(results.map(answer), ['503', '503', '503']);
      for (const r of results) assert.match(!r.ok && r.error instanceof HttpError ? r.error.detail : '', /put back to Failed/);
      for (const [i, t] of targets.entries()) {
        const row = await stack.store.getStatusRow(EP, t.eventId, t.sessionId);
        assert.deepEqual([row?.status, row?.lastMessageId], ['Failed', before[i]!.lastMessageId], `${t.eventId}: the claim is undone`);
        const audits = (await stack.store.listAudits(t.eventId)).items;
        assert.deepEqual(audits.map((a) => a.type), ['CommandNotSent'], `${t.eventId}: the failure is audited, no receipt`);
      }
    } finally {
      await provisionTopology(stack.serviceBus.admin, deriveTopology(stack.catalog), { subscriptionDefaults: { lockDuration: 'PT5S' } });
    }
    // The client may still hold the link to the deleted topic for a moment: retry the lot until it goes through.
    let results: Settled<CommandResult>[] = [];
    for (let i = 0; i < 10; i++) {
      results = await manager.executeMany(targets, { kind: 'skip' }, 'tester', origin);
      if (results.every((r) => r.ok)) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.deepEqual(results.map(answer), ['sent', 'sent', 'sent']);
    const wire = await onTheWire(ids);
    for (const [i, id] of ids.entries()) assert.deepEqual(wire.get(id), [(results[i] as { value: CommandResult }).value.messageId], `${id}: sent once`);
  });
});
