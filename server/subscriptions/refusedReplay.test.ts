// A refused Manager command's dead letter, replayed from Topology → Subscriptions, on the whole real path: an SDK
// subscriber host on billingendpoint, a Resolver recording into the embedded Cosmos store, the console's route
// handlers, all on the embedded emulator with the real clients. The subscriber dead-letters a command it refuses
// with the reason CommandRefused (packages/sdk decide.ts `refuse`); its copy replayed unchanged carries the same
// properties, so the subscriber refuses it again: nothing is gained, and the event gets a second refusal notice.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { HandlerRegistry, Publisher, sessionKeysFromCatalog, SubscriberHost } from '@nimbus/sdk';
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
    // Every order fails: its row is Failed and its session blocked, as an operator finds it.
    const handlers = new HandlerRegistry().on<Order>('OrderPlaced', (o) => {
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

/** Waits for a replay operation to end and returns its record. */
async function finished(operationId: string): Promise<{ state: string; replayed: number }> {
  const op = await import('../../app/api/topology/operations/[operationId]/route.ts');
  return eventually(async () => {
    const r = (await (await op.GET(req('GET'), params({ operationId }))).json()) as { state: string; replayed: number };
    return r.state === 'running' ? undefined : r;
  }, `replay ${operationId} to end`, 60_000);
}

describe('a CommandRefused dead letter replayed', () => {
  test('is refused again by the subscriber: a second CommandRefused notice and dead letter, the row unchanged', async () => {
    const row = await failedRow(`ORD-RR-${randomUUID().slice(0, 6)}`);
    const dead = await refusedCommand(row);
    const replay = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts');
    const res = await replay.POST(req('POST', { sequenceNumbers: [dead.sequenceNumber] }), sub);
    assert.equal(res.status, 202, await res.clone().text());
    const op = await finished(((await res.json()) as { operationId: string }).operationId);
    assert.deepEqual({ state: op.state, replayed: op.replayed }, { state: 'done', replayed: 1 });

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
