// A refused Manager command's dead letter, replayed from Topology → Subscriptions, on the whole real path: an SDK
// subscriber host on billingendpoint, a Resolver recording into the embedded Cosmos store, the console's route
// handlers, all on the embedded emulator with the real clients. The subscriber dead-letters a command it refuses
// with the reason CommandRefused (packages/sdk decide.ts `refuse`); its copy replayed unchanged carries the same
// properties, so the subscriber refuses it again: nothing is gained, and the event gets a second refusal notice.
// So the list and the preview mark it (`replayWarning`), a replay that lists it is refused (409) unless it says
// `includeWarned`, and a replay of the whole queue skips it, leaves it in the queue and reports it as skipped.
// Also on this path: a replay of the whole queue over a dead letter that fails again replays it once, not in a loop.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { HandlerRegistry, PermanentFailureError, Publisher, sessionKeysFromCatalog, SubscriberHost } from '@nimbus/sdk';
import { eventBody, MessageType, Prop, WireText } from '@nimbus/sdk/contract';
import type { StatusRowSummary } from '../../lib/store/index.ts';
import { startResolver, type ResolverHandle } from '../../resolver-worker/index.ts';
import { eventually } from '../../resolver-worker/testHarness.ts';
import { endProcessAfterResults } from '../../packages/sdk/e2e/harness.ts';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { peekDeadLetters, type DeadLetterView } from './deadLetters.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
// A stopped host or Resolver on the shared client can leave rhea-promise's 60 s link-open timer behind (docs/resolver.md).
endProcessAfterResults();

const EP = 'billingendpoint';
type Order = { orderId: string; n: number };
let resolver: ResolverHandle | undefined;
let host: SubscriberHost | undefined;
let publisher: Publisher | undefined;
/** How often the handler ran for each ALWAYS- order (they fail permanently every time). */
const alwaysRuns = new Map<string, number>();

// Before useConsoleStack's: top-level after hooks run in order, and these stop before the stack they use.
after(async () => {
  await publisher?.close().catch(() => undefined);
  await host?.stop().catch(() => undefined);
  await resolver?.stop().catch(() => undefined);
});

const stack = useConsoleStack({
  database: 'refusedreplay',
  env: { NIMBUS_RATE_LIMIT_BURST: '1000' },
  prepare: async (s) => {
    resolver = startResolver({ client: s.serviceBus.client, store: s.store, sessionIdleTimeoutMs: 200, log: pino({ level: 'silent' }) });
    // Every order fails: its row is Failed and its session blocked, as an operator finds it. A PERM- order fails
    // permanently the first time (dead-lettered) and is handled once replayed, as after a fix: a dead letter a
    // replay still sends (it only warns of permanent failures), and whose copy does not come back to the queue.
    const permanentOnce = new Set<string>();
    // An ALWAYS- order fails permanently every time, as a permanent failure replayed without a fix does.
    const handlers = new HandlerRegistry().on<Order>('OrderPlaced', (o) => {
      if (o.orderId.startsWith('ALWAYS-')) {
        alwaysRuns.set(o.orderId, (alwaysRuns.get(o.orderId) ?? 0) + 1);
        throw new PermanentFailureError(`order ${o.orderId} is malformed for good`);
      }
      if (o.orderId.startsWith('PERM-')) {
        if (permanentOnce.has(o.orderId)) return;
        permanentOnce.add(o.orderId);
        throw new PermanentFailureError(`order ${o.orderId} is malformed`);
      }
      throw new Error(`credit check unavailable for ${o.orderId}`);
    });
    host = new SubscriberHost({ client: s.serviceBus.client, endpointId: EP, handlers, maxConcurrentSessions: 4, sessionIdleTimeoutMs: 300, backoff: { initialMs: 50, maxMs: 500 }, deferredProcessor: false });
    await host.start();
    publisher = new Publisher({ client: s.serviceBus.client, endpointId: 'storefrontendpoint', sessionKeys: sessionKeysFromCatalog(s.catalog) });
  },
});

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const req = (method: string, body?: unknown) =>
  new Request('http://127.0.0.1/api/x', { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
const sub = params({ topic: EP, subscription: EP });

async function failedRow(orderId: string): Promise<StatusRowSummary> {
  await publisher!.publish('OrderPlaced', { orderId, n: 1 });
  return eventually(async () => (await stack.store.listEvents({ endpointId: EP, sessionId: orderId })).items.find((r) => r.status === 'Failed'), `the Failed row of ${orderId}`, 60_000);
}

const refusalAudits = async (eventId: string) => (await stack.store.listAudits(eventId)).items.filter((a) => a.type === WireText.CommandRefused);

/** The dead letters of EP's main subscription that are copies of message `messageId`. */
async function deadLettersOf(messageId: string): Promise<DeadLetterView[]> {
  const page = await peekDeadLetters(stack.serviceBus.client, EP, EP, { pageSize: 100 });
  return page.items.filter((d) => d.messageId === messageId);
}

/**
 * A SkipRequest that did not come from the Manager, straight to the endpoint's topic (as resolver-worker/sdk.e2e.test.ts
 * forges one): the subscriber refuses it and dead-letters it as CommandRefused. Resolves with the dead letter.
 */
async function refusedCommand(row: StatusRowSummary): Promise<DeadLetterView> {
  const messageId = randomUUID();
  const sender = stack.serviceBus.client.createSender(EP);
  try {
    await sender.sendMessages({
      messageId,
      sessionId: row.sessionId,
      body: Buffer.from(eventBody('OrderPlaced', { orderId: row.sessionId, n: 1 })),
      applicationProperties: { [Prop.To]: EP, [Prop.From]: 'storefrontendpoint', [Prop.MessageType]: MessageType.SkipRequest, [Prop.EventId]: row.eventId, [Prop.EventTypeId]: 'OrderPlaced' },
    });
  } finally {
    await sender.close();
  }
  await eventually(async () => ((await refusalAudits(row.eventId)).length === 1 ? true : undefined), 'the first CommandRefused audit', 60_000);
  const [dead] = await eventually(async () => {
    const found = await deadLettersOf(messageId);
    return found.length === 1 ? found : undefined;
  }, 'the refused command in the dead-letter queue', 60_000);
  assert.equal(dead!.reason, WireText.CommandRefused);
  return dead!;
}

interface Operation {
  state: string;
  replayed: number;
  skipped?: number;
  arrivedAfterStart?: number;
  skippedSequenceNumbers?: string[];
  messageIds: string[];
}

/** Waits for a replay operation to end and returns its record. */
async function finished(operationId: string): Promise<Operation> {
  const op = await import('../../app/api/topology/operations/[operationId]/route.ts');
  return eventually(async () => {
    const r = (await (await op.GET(req('GET'), params({ operationId }))).json()) as Operation;
    return r.state === 'running' ? undefined : r;
  }, `replay ${operationId} to end`, 60_000);
}

describe('a CommandRefused dead letter replayed', () => {
  test('the list and the preview mark it with a warning that links to its event; nothing is to be sent', async () => {
    const row = await failedRow(`ORD-RW-${randomUUID().slice(0, 6)}`);
    const dead = await refusedCommand(row);
    const text = 'a refused Manager command: replaying it is refused again; resubmit or skip the event from its page instead';
    const list = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/deadletters/route.ts');
    const page = (await (await list.GET(req('GET'), sub)).json()) as { items: DeadLetterView[] };
    const listed = page.items.find((d) => d.sequenceNumber === dead.sequenceNumber);
    assert.deepEqual(listed?.replayWarning, { code: 'CommandRefused', text });
    assert.deepEqual(listed?.event, { endpointId: EP, eventId: row.eventId, eventTypeId: 'OrderPlaced' }, 'the link target: the event page');

    const preview = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/preview/route.ts');
    const res = await preview.POST(req('POST', { sequenceNumbers: [dead.sequenceNumber] }), sub);
    assert.equal(res.status, 200, await res.clone().text());
    const p = (await res.json()) as { count: number; toSend: number; warned: number; warnedItems: Array<{ sequenceNumber: string; event: unknown; warning: unknown }>; alsoReaches: unknown[] };
    assert.deepEqual(
      { count: p.count, toSend: p.toSend, warned: p.warned, alsoReaches: p.alsoReaches },
      { count: 1, toSend: 0, warned: 1, alsoReaches: [] },
      'skipped by the replay: nothing sent, no copy reaches the Resolver subscription',
    );
    assert.deepEqual(p.warnedItems.map((w) => ({ sequenceNumber: w.sequenceNumber, event: w.event, warning: w.warning })), [
      { sequenceNumber: dead.sequenceNumber, event: { endpointId: EP, eventId: row.eventId, eventTypeId: 'OrderPlaced' }, warning: { code: 'CommandRefused', text } },
    ]);
    const forced = (await (await preview.POST(req('POST', { sequenceNumbers: [dead.sequenceNumber], includeWarned: true }), sub)).json()) as { toSend: number; warned: number };
    assert.deepEqual({ toSend: forced.toSend, warned: forced.warned }, { toSend: 1, warned: 1 }, 'with includeWarned it is sent, still counted as warned');
  });

  test('listed by sequence number, the replay is refused with a 409 that says why; nothing is replayed', async () => {
    const row = await failedRow(`ORD-RX-${randomUUID().slice(0, 6)}`);
    const dead = await refusedCommand(row);
    const replay = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts');
    const res = await replay.POST(req('POST', { sequenceNumbers: [dead.sequenceNumber] }), sub);
    assert.equal(res.status, 409, await res.clone().text());
    const body = (await res.json()) as { code: string; detail: string };
    assert.equal(body.code, 'replay-warned');
    assert.match(body.detail, new RegExp(`^1 of the listed dead letters is not replayed, .*#${dead.sequenceNumber} \\(event ${row.eventId}\\): a refused Manager command: replaying it is refused again; .*includeWarned: true`));
    const still = await deadLettersOf(dead.messageId!);
    assert.deepEqual(still.map((d) => d.sequenceNumber), [dead.sequenceNumber], 'still in the queue, untouched');
    assert.equal((await refusalAudits(row.eventId)).length, 1);
    // A flag that is not a boolean is a 400, as any other bad selection.
    assert.equal((await replay.POST(req('POST', { sequenceNumbers: [dead.sequenceNumber], includeWarned: 'yes' }), sub)).status, 400);
  });

  test('a replay of the whole queue skips it and reports it skipped; it stays in the queue; others are replayed', async () => {
    const row = await failedRow(`ORD-RA-${randomUUID().slice(0, 6)}`);
    const dead = await refusedCommand(row);
    // A permanent failure in the same queue: only warned of in the preview, replayed as before.
    await publisher!.publish('OrderPlaced', { orderId: `PERM-${randomUUID().slice(0, 6)}`, n: 1 });
    const permanent = await eventually(async () => {
      const page = await peekDeadLetters(stack.serviceBus.client, EP, EP, { pageSize: 100 });
      return page.items.find((d) => d.permanentFailure);
    }, 'the permanent failure dead-lettered', 60_000);
    const replay = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts');
    const res = await replay.POST(req('POST', { all: true }), sub);
    assert.equal(res.status, 202, await res.clone().text());
    const op = await finished(((await res.json()) as { operationId: string }).operationId);
    assert.equal(op.state, 'done');
    assert.ok(op.skippedSequenceNumbers?.includes(dead.sequenceNumber), `skipped: ${JSON.stringify(op.skippedSequenceNumbers)}`);
    assert.equal(op.skipped, op.skippedSequenceNumbers?.length);
    assert.ok(op.messageIds.includes(permanent.messageId!), 'the permanent failure was replayed');
    assert.ok(!op.messageIds.includes(dead.messageId!), 'the refused command was not');
    const still = await deadLettersOf(dead.messageId!);
    assert.deepEqual(still.map((d) => d.sequenceNumber), [dead.sequenceNumber], 'left in the queue, same sequence number');
    assert.equal((await refusalAudits(row.eventId)).length, 1, 'no second refusal');
  });

  test('with includeWarned it is replayed, and the subscriber refuses it again: a second notice and dead letter, the row unchanged', async () => {
    const row = await failedRow(`ORD-RR-${randomUUID().slice(0, 6)}`);
    const dead = await refusedCommand(row);
    const replay = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts');
    const res = await replay.POST(req('POST', { sequenceNumbers: [dead.sequenceNumber], includeWarned: true }), sub);
    assert.equal(res.status, 202, await res.clone().text());
    const op = await finished(((await res.json()) as { operationId: string }).operationId);
    assert.deepEqual({ state: op.state, replayed: op.replayed, skipped: op.skipped }, { state: 'done', replayed: 1, skipped: 0 });

    // The copy, same MessageId, meets the same refusal: a second notice (the Resolver audits each), and the command is
    // back in the dead-letter queue under a new sequence number.
    await eventually(async () => ((await refusalAudits(row.eventId)).length === 2 ? true : undefined), 'a second CommandRefused audit', 60_000);
    const again = await eventually(async () => {
      const found = await deadLettersOf(dead.messageId!);
      return found.length === 1 && found[0]!.sequenceNumber !== dead.sequenceNumber ? found[0] : undefined;
    }, 'the replayed command dead-lettered again', 60_000);
    assert.equal(again.reason, WireText.CommandRefused);
    const now = await stack.store.getStatusRow(EP, row.eventId, row.sessionId);
    assert.equal(now?.status, 'Failed');
    assert.equal(now?.lastMessageId, row.lastMessageId, 'the refused command and its replay changed nothing on the row');
  });
});

describe('a dead letter that fails again when replayed', () => {
  test('a replay of the whole queue replays it once and ends; the copy dead-lettered again stays in the queue', async () => {
    const orderId = `ALWAYS-${randomUUID().slice(0, 6)}`;
    await publisher!.publish('OrderPlaced', { orderId, n: 1 });
    const dead = await eventually(async () => {
      const page = await peekDeadLetters(stack.serviceBus.client, EP, EP, { pageSize: 100 });
      return page.items.find((d) => d.sessionId === orderId && d.permanentFailure);
    }, 'the permanent failure dead-lettered', 60_000);
    assert.equal(alwaysRuns.get(orderId), 1);
    const replay = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts');
    const res = await replay.POST(req('POST', { all: true }), sub);
    assert.equal(res.status, 202, await res.clone().text());
    // Before the fix the pass received each copy the subscriber dead-lettered again and replayed it, up to 5000
    // times: this wait (60 s) then ran out, or the operation listed the MessageId many times.
    const op = await finished(((await res.json()) as { operationId: string }).operationId);
    assert.equal(op.state, 'done');
    assert.equal(op.messageIds.filter((id) => id === dead.messageId).length, 1, `replayed once: ${JSON.stringify(op.messageIds)}`);
    // Whether the copy came back before the pass ended depends on the subscriber's pace: it is left either way.
    assert.ok((op.arrivedAfterStart ?? 0) <= 1, `arrivedAfterStart: ${op.arrivedAfterStart}`);

    const again = await eventually(async () => {
      const found = await deadLettersOf(dead.messageId!);
      return found.length === 1 && found[0]!.sequenceNumber !== dead.sequenceNumber ? found[0] : undefined;
    }, 'the replayed copy dead-lettered again', 60_000);
    assert.ok(again.permanentFailure);
    assert.ok(BigInt(again.sequenceNumber) > BigInt(dead.sequenceNumber), 'a new, higher sequence number');
    assert.equal(alwaysRuns.get(orderId), 2, 'the handler ran for the original and for one copy');
    const audits = (await stack.store.listAudits(dead.event!.eventId)).items.filter((a) => a.type === 'ReplayDeadLetter');
    assert.equal(audits.length, 1, 'one replay on the event\'s audit trail');
  });
});
