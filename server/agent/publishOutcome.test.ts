// What an Agent API publish's record becomes when the send or the store fails (publish.ts, publishRecords.ts). The
// embedded Cosmos server holds the records; the broker is a seam in place of the Service Bus client (a send that
// lands and then throws is not something the emulator can be made to do on cue), which counts the messages that
// landed. The route, the emulator and the AgentClient: publishOnce.test.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ServiceBusError } from '@azure/service-bus';
import type { Database } from '@azure/cosmos';
import { loadCatalog } from '@nimbus/sdk/catalog';
import { deterministicMessageId } from '@nimbus/sdk';
import { createStore, startEmbeddedCosmos, type EmbeddedCosmos, type MessageStore } from '../../lib/store/index.ts';
import { DEFAULT_CATALOG_PATH } from '../config.ts';
import { describeError } from '../http.ts';
import { log, setConsoleLogSink } from '../log.ts';
import type { ConsoleContext } from '../context.ts';
import { BROKER_MESSAGE_BYTES } from '../messageSize.ts';
import { PUBLISH_IN_FLIGHT_CODE, publishAsAgent } from './publish.ts';
import { PUBLISH_IN_FLIGHT_MS, PUBLISH_RECORDS_CONTAINER, publishRecordId, type PublishRecord } from './publishRecords.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let cosmos: EmbeddedCosmos;
let store: MessageStore;
let catalog: Awaited<ReturnType<typeof loadCatalog>>;
before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
  store = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'publishoutcome' });
  catalog = await loadCatalog(DEFAULT_CATALOG_PATH);
});
after(async () => {
  await store.close().catch(() => undefined);
  await cosmos.close().catch(() => undefined);
});

type Landed = { messageId: unknown; sessionId: unknown };
/** A broker: `behave` says per send (numbered from 1) whether the message lands and what the send then throws. */
function busSeam(behave: (n: number) => { lands: boolean; throws?: unknown }) {
  const landed: Landed[] = [];
  let sends = 0;
  const client = {
    createSender: () => ({
      sendMessages: async (m: Landed) => {
        const b = behave(++sends);
        if (b.lands) landed.push({ messageId: m.messageId, sessionId: m.sessionId });
        if (b.throws !== undefined) throw b.throws;
      },
      close: async () => undefined,
    }),
  };
  return { client, landed, sends: () => sends };
}

// The broker's size as the console knows it before a read (the Standard tier's): the publish's pre-check asks for it.
const ctxOf = (client: unknown, database: Database = store.database): ConsoleContext =>
  ({ catalog, serviceBus: { client }, store: { database }, commandMessageSize: { topicBytes: async () => BROKER_MESSAGE_BYTES } }) as unknown as ConsoleContext;

const order = (orderId: string) => ({ orderId, customerId: 'C-outcome', lines: [{ sku: 'o', quantity: 1, unitPrice: 1 }], total: 1, currency: 'EUR' });
const publish = (ctx: ConsoleContext, orderId: string) => publishAsAgent(ctx, 'storefrontendpoint', 'OrderPlaced', order(orderId), undefined, 'user:a');
/** The answer a publish gets: 200 and its body, or the status, detail and code of its error. */
const answerOf = async (p: Promise<unknown>) =>
  p.then(
    (body) => ({ status: 200, body, detail: '', code: undefined as string | undefined }),
    (e: unknown) => {
      const d = describeError(e);
      return { status: d.status, body: undefined, detail: d.detail, code: d.code };
    },
  );

async function recordOf(orderId: string): Promise<PublishRecord | undefined> {
  const messageId = deterministicMessageId('OrderPlaced', JSON.stringify(order(orderId)));
  const c = store.database.container(PUBLISH_RECORDS_CONTAINER);
  const { resource } = await c.item(publishRecordId('storefrontendpoint', messageId), 'storefrontendpoint').read<PublishRecord>();
  return resource;
}

describe('a publish whose send fails', () => {
  // Before, every failure removed the record: the retry of a send that had landed sent a second copy.
  for (const [what, failure] of [
    ['a ServiceTimeout', new ServiceBusError('The operation did not complete within the allotted timeout', 'ServiceTimeout')],
    ['a lost connection', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
  ] as const) {
    test(`with ${what} after the broker took it: 503, the record stays sending, the retry is answered 409 publish-in-flight, one copy`, async () => {
      const bus = busSeam((n) => (n === 1 ? { lands: true, throws: failure } : { lands: true }));
      const ctx = ctxOf(bus.client);
      const orderId = `ORD-UNCERTAIN-${what.replaceAll(' ', '-')}`;
      const first = await answerOf(publish(ctx, orderId));
      assert.equal(first.status, 503, 'answered 503: the AgentClient retries it');
      const retry = await answerOf(publish(ctx, orderId));
      assert.equal(bus.landed.length, 1, `landed ${bus.landed.length} times: ${JSON.stringify(bus.landed)}`);
      assert.deepEqual([retry.status, retry.code], [409, PUBLISH_IN_FLIGHT_CODE], retry.detail);
      assert.equal(bus.sends(), 1, 'the retry sent nothing');
      assert.equal((await recordOf(orderId))?.state, 'sending', 'the record kept');
      assert.match(first.detail, /may have been sent/);
    });
  }

  test('with its outcome unknown, is sent again once the in-flight bound has passed (the documented duplicate window)', async () => {
    const timeout = new ServiceBusError('The operation did not complete within the allotted timeout', 'ServiceTimeout');
    const bus = busSeam((n) => (n === 1 ? { lands: false, throws: timeout } : { lands: true }));
    const ctx = ctxOf(bus.client);
    assert.equal((await answerOf(publish(ctx, 'ORD-UNCERTAIN-LATER'))).status, 503);
    // The bound passed: the record's start moved back instead of the clock forward.
    const rec = await recordOf('ORD-UNCERTAIN-LATER');
    assert.ok(rec);
    await store.database.container(PUBLISH_RECORDS_CONTAINER).item(rec.id, rec.endpointId).replace({ ...rec, startedAt: new Date(Date.now() - PUBLISH_IN_FLIGHT_MS - 1000).toISOString() });
    const later = await answerOf(publish(ctx, 'ORD-UNCERTAIN-LATER'));
    assert.equal(later.status, 200, later.detail);
    assert.equal(bus.landed.length, 1);
    assert.equal((await recordOf('ORD-UNCERTAIN-LATER'))?.state, 'sent');
  });

  // Refusals that prove nothing was enqueued still remove the record, so the retry sends (as before).
  for (const [what, refusal, status] of [
    ['too large', new ServiceBusError('message too large', 'MessageSizeExceeded'), 413],
    ['no such topic', new ServiceBusError('entity not found', 'MessagingEntityNotFound'), 503],
    ['not authorized', new ServiceBusError('unauthorized', 'UnauthorizedAccess'), 503],
    ['an argument error of the client', new TypeError('Missing parameter "messages"'), 503],
  ] as const) {
    test(`refused (${what}): answered ${status}, the record removed, the retry sends`, async () => {
      const bus = busSeam((n) => (n === 1 ? { lands: false, throws: refusal } : { lands: true }));
      const ctx = ctxOf(bus.client);
      const orderId = `ORD-REFUSED-${what.replaceAll(' ', '-')}`;
      const first = await answerOf(publish(ctx, orderId));
      assert.equal(first.status, status, first.detail);
      assert.equal(await recordOf(orderId), undefined, 'the record removed');
      const retry = await answerOf(publish(ctx, orderId));
      assert.equal(retry.status, 200, retry.detail);
      assert.deepEqual([bus.sends(), bus.landed.length], [2, 1]);
    });
  }
});

describe('a publish whose records container cannot be opened', () => {
  // Before, the container's open (createIfNotExists) was outside the store-error mapping: 500 "internal error".
  test('with the store unreachable on the first publish of a process: 503 (try again) each time, nothing sent', async () => {
    const dead = await startEmbeddedCosmos({ port: 0 });
    const deadStore = await createStore({ endpoint: dead.endpoint, key: dead.key, database: 'publishoutcomedead' });
    await dead.close();
    try {
      const bus = busSeam(() => ({ lands: true }));
      const ctx = ctxOf(bus.client, deadStore.database);
      for (const attempt of [1, 2]) {
        const err = await publish(ctx, 'ORD-DEAD-STORE').then(() => assert.fail('answered 200'), (e: unknown) => e);
        const d = describeError(err);
        assert.deepEqual([d.status, d.error, d.internal], [503, 'unavailable', undefined], `attempt ${attempt}: ${d.detail}`);
      }
      assert.equal(bus.sends(), 0);
    } finally {
      await deadStore.close().catch(() => undefined);
    }
  });

  test('refused with 403 on its creation (Entra data-plane roles): 503 naming the missing container, logged once per process', async () => {
    // The real database, whose container creation Cosmos refuses as it does an identity with data-plane roles only.
    const real = store.database;
    let creations = 0;
    // The open reads the container first and creates it only on a 404 (lib/store/containers.ts): the read answers
    // 404 (missing), the creation 403.
    const refused = async () => {
      creations++;
      throw Object.assign(new Error('Request blocked by Auth: the principal does not have the required RBAC permissions'), { code: 403, substatus: 5301 });
    };
    const database = new Proxy(real, {
      get(t, p) {
        if (p === 'container')
          return () => ({
            read: async () => {
              throw Object.assign(new Error('Resource Not Found'), { code: 404 });
            },
          });
        if (p !== 'containers') return Reflect.get(t, p);
        return { create: refused, createIfNotExists: refused };
      },
    }) as Database;
    const bus = busSeam(() => ({ lands: true }));
    const ctx = ctxOf(bus.client, database);
    const records: Array<Record<string, unknown>> = [];
    const level = log.level;
    setConsoleLogSink((record) => records.push(JSON.parse(record) as Record<string, unknown>));
    log.level = 'warn';
    try {
      for (const attempt of [1, 2, 3]) {
        const d = describeError(await publish(ctx, 'ORD-NO-CONTAINER').then(() => assert.fail('answered 200'), (e: unknown) => e));
        assert.deepEqual([d.status, d.error], [503, 'not configured'], `attempt ${attempt}: ${d.detail}`);
        assert.match(d.detail, /container agentPublishes is missing .* must be created as docs\/deploy\.md shows/);
      }
    } finally {
      log.level = level;
      setConsoleLogSink(undefined);
    }
    assert.equal(creations, 3, 'tried again on each publish');
    assert.equal(bus.sends(), 0);
    const errors = records.filter((r) => r.level === 50);
    assert.equal(errors.length, 1, `one error logged: ${JSON.stringify(records)}`);
    assert.equal(errors[0]!.container, 'agentPublishes');
    assert.match(String(errors[0]!.msg), /agentPublishes is missing/);
  });
});

/**
 * The real database, whose records' item replace fails while `failures.left > 0` (one failure each): before the write
 * reaches the store (`applied: false`, as a refused connection) or after it was applied (`applied: true`, as an
 * answer lost on its way back).
 */
function replaceFailing(failures: { left: number; applied: boolean }): Database {
  const real = store.database;
  const wrapItem = (item: ReturnType<ReturnType<Database['container']>['item']>) =>
    new Proxy(item, {
      get(t, p) {
        const v = Reflect.get(t, p) as unknown;
        if (p !== 'replace' || typeof v !== 'function') return typeof v === 'function' ? v.bind(t) : v;
        return async (...args: unknown[]) => {
          if (failures.left <= 0) return (v as (...a: unknown[]) => unknown).apply(t, args);
          failures.left--;
          if (failures.applied) await (v as (...a: unknown[]) => Promise<unknown>).apply(t, args);
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1'), { code: 'ECONNREFUSED' });
        };
      },
    });
  const wrapContainer = (c: ReturnType<Database['container']>): ReturnType<Database['container']> => {
    const wrapped: ReturnType<Database['container']> = new Proxy(c, {
      get(t, p) {
        if (p === 'item') return (id: string, pk: string) => wrapItem(t.item(id, pk));
        // The open reads the container first (lib/store/containers.ts) and keeps the container of the read's answer.
        if (p === 'read') return async () => ({ container: wrapped, resource: (await t.read()).resource });
        const v = Reflect.get(t, p) as unknown;
        return typeof v === 'function' ? v.bind(t) : v;
      },
    });
    return wrapped;
  };
  return new Proxy(real, {
    get(t, p) {
      if (p === 'container') return (id: string) => wrapContainer(t.container(id));
      if (p !== 'containers') return Reflect.get(t, p);
      type Def = Parameters<Database['containers']['create']>[0];
      return {
        create: async (def: Def) => ({ container: wrapContainer((await t.containers.create(def)).container) }),
        createIfNotExists: async (def: Def) => ({ container: wrapContainer((await t.containers.createIfNotExists(def)).container) }),
      };
    },
  }) as Database;
}

describe('a publish whose `sent` write fails after the send', () => {
  // Before, one failed write was given up: the record stayed `sending`, so the retry got 409 and, past the bound,
  // sent a second copy.
  test('once, then succeeds: the write is retried, and a later retry of the publish is replayed, nothing sent again', async () => {
    const failures = { left: 0, applied: false };
    // Armed by the send itself, so that the record's creation before it is not the write that fails.
    const bus = busSeam(() => {
      failures.left = 1;
      return { lands: true };
    });
    const ctx = ctxOf(bus.client, replaceFailing(failures));
    const first = await answerOf(publish(ctx, 'ORD-SENT-WRITE'));
    assert.equal(first.status, 200, first.detail);
    assert.equal(failures.left, 0, 'the write failed once');
    const retry = await answerOf(publish(ctx, 'ORD-SENT-WRITE'));
    assert.equal(retry.status, 200, `${retry.status} ${retry.code ?? ''} ${retry.detail}`);
    assert.deepEqual(retry.body, { ...(first.body as object), replayed: true });
    assert.equal(bus.sends(), 1, 'sent once');
    assert.equal((await recordOf('ORD-SENT-WRITE'))?.state, 'sent');
  });

  test('applied but unanswered, then refused for its etag on the next attempt: taken as written, no warning', async () => {
    const failures = { left: 0, applied: true };
    const bus = busSeam(() => {
      failures.left = 1;
      return { lands: true };
    });
    const ctx = ctxOf(bus.client, replaceFailing(failures));
    const records: Array<Record<string, unknown>> = [];
    const level = log.level;
    setConsoleLogSink((record) => records.push(JSON.parse(record) as Record<string, unknown>));
    log.level = 'warn';
    let first;
    try {
      first = await answerOf(publish(ctx, 'ORD-SENT-LANDED'));
    } finally {
      log.level = level;
      setConsoleLogSink(undefined);
    }
    assert.equal(first.status, 200, first.detail);
    assert.deepEqual(records.map((r) => r.msg), [], 'neither "taken over" nor "not written"');
    const retry = await answerOf(publish(ctx, 'ORD-SENT-LANDED'));
    assert.deepEqual(retry.body, { ...(first.body as object), replayed: true });
    assert.equal(bus.sends(), 1);
  });
});
