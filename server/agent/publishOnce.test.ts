// A retried Agent API publish is delivered once (server/agent/publishRecords.ts). On the embedded stack: the emulator
// behind a TCP proxy the test can silence, the embedded Cosmos server, the console's real publish route with sealed
// session cookies of agent identities, the SDK's AgentClient. Deliveries are counted on a consumer's subscription:
// each test's events share one session, and a sentinel published last into it is the positive signal that every
// earlier message of the session has been received (sessions are FIFO). Before the record, a retry after a lost
// answer was sent again: two deliveries.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { startTcpFaultProxy, type TcpFaultProxy } from '../testing/tcpFaultProxy.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';
import { AgentClient, PUBLISH_IN_FLIGHT_CODE } from '../../packages/sdk/src/agentClient.ts';
import { deterministicMessageId } from '@nimbus/sdk';
import { PUBLISH_IN_FLIGHT_MS, PUBLISH_RECORDS_CONTAINER, publishRecordId, type PublishRecord } from './publishRecords.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const SECRET = 'publish-once-test-session-secret-0123456789-abcdef';
let busProxy: TcpFaultProxy | undefined;
const stack = useConsoleStack({
  database: 'publishonce',
  env: async (s) => {
    busProxy = await startTcpFaultProxy({ port: s.emulator.port });
    const proxied = s.emulator.connectionString.replace(`:${s.emulator.port};`, `:${busProxy.port};`);
    assert.notEqual(proxied, s.emulator.connectionString, 'the connection string names the emulator port');
    return {
      ...oidcTestEnv(SECRET, { roles: { 'Order.Publish': 'Agent:storefrontendpoint' }, groups: {} }),
      // The console's broker connection goes through the proxy; the test's own (counting deliveries) does not.
      NIMBUS_SERVICEBUS_CONNECTION_STRING: proxied,
      NIMBUS_RATE_LIMIT_BURST: '1000',
    };
  },
});
after(async () => {
  await busProxy?.close();
});

const publisher = (id: string): Principal => ({ kind: 'user', id: `oid-${id}`, name: `${id}@test`, roles: ['Order.Publish'], groups: [] });

function request(who: Principal, body: unknown): Request {
  const cookie = `${SESSION_COOKIE}=${sealSession(who, { secret: SECRET, maxAgeSeconds: 600 })}`;
  return new Request('http://127.0.0.1:3000/api/agent/publish', {
    method: 'POST',
    headers: { host: '127.0.0.1:3000', cookie, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function post(who: Principal, body: unknown): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const route = await import('../../app/api/agent/publish/route.ts');
  const res = await route.POST(request(who, body));
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const order = (orderId: string, marker: string) => ({ orderId, customerId: 'C-once', lines: [{ sku: marker, quantity: 1, unitPrice: 1 }], total: 1, currency: 'EUR' });
const publishOf = (orderId: string, marker: string) => ({ endpointId: 'storefrontendpoint', eventTypeId: 'OrderPlaced', payload: order(orderId, marker) });

const MARKERS = ['lost', 'slow', 'expired', 'stale', 'other'];
/** Which marker a message carries, by its message id (derived from the payload, so from the marker). */
const markerOf = (orderId: string, messageId: string) =>
  MARKERS.find((m) => deterministicMessageId('OrderPlaced', JSON.stringify(order(orderId, m))) === messageId) ?? `unknown ${messageId}`;

/**
 * Publishes a sentinel into the session, then receives from billingendpoint's subscription (it consumes OrderPlaced)
 * until the sentinel: the markers of every message before it, in order.
 */
let sentinels = 0;
async function deliveredMarkers(orderId: string): Promise<string[]> {
  // A sentinel of its own each time: the same one again would be a retry, answered without being sent.
  const sentinel = await post(publisher('sentinel'), publishOf(orderId, `sentinel-${++sentinels}`));
  assert.equal(sentinel.body.replayed, undefined);
  assert.equal(sentinel.status, 200, JSON.stringify(sentinel.body));
  const receiver = await stack.serviceBus.client.acceptSession('billingendpoint', 'billingendpoint', orderId);
  const markers: string[] = [];
  try {
    // The bound only ends a run that went wrong; the sentinel ends a good one.
    for (const deadline = Date.now() + 120_000; Date.now() < deadline; ) {
      for (const m of await receiver.receiveMessages(10, { maxWaitTimeInMs: 5_000 })) {
        await receiver.completeMessage(m);
        if (m.messageId === sentinel.body.messageId) return markers;
        markers.push(markerOf(orderId, String(m.messageId)));
      }
    }
    assert.fail(`the sentinel did not arrive; received ${JSON.stringify(markers)}`);
  } finally {
    await receiver.close();
  }
}

async function storedRecord(orderId: string, marker: string): Promise<PublishRecord | undefined> {
  const messageId = deterministicMessageId('OrderPlaced', JSON.stringify(order(orderId, marker)));
  const { resource } = await stack.store.database.container(PUBLISH_RECORDS_CONTAINER).item(publishRecordId('storefrontendpoint', messageId), 'storefrontendpoint').read<PublishRecord>();
  return resource;
}

describe('a retried Agent API publish', () => {
  test('whose first answer was lost is delivered once, and the retry is answered the first outcome marked replayed', async () => {
    const firstAnswers: unknown[] = [];
    let calls = 0;
    // The AgentClient's requests go to the route; the first answer is dropped on its way back (as a connection lost
    // after the console sent the event), so the client retries.
    const routes = (async (_input: URL, init: RequestInit) => {
      calls++;
      const route = await import('../../app/api/agent/publish/route.ts');
      const cookie = `${SESSION_COOKIE}=${sealSession(publisher('lost'), { secret: SECRET, maxAgeSeconds: 600 })}`;
      const res = await route.POST(new Request('http://127.0.0.1:3000/api/agent/publish', { ...init, headers: { ...(init.headers as Record<string, string>), host: '127.0.0.1:3000', cookie } }));
      if (calls === 1) {
        firstAnswers.push({ status: res.status, body: await res.json() });
        throw new TypeError('fetch failed: the connection was reset');
      }
      return res;
    }) as typeof fetch;
    const client = new AgentClient({ consoleUrl: 'http://127.0.0.1:3000', fetch: routes, retry: { attempts: 4, initialMs: 10, maxMs: 10 } });
    const answer = await client.publish(publishOf('ORD-LOST', 'lost'));

    assert.deepEqual(await deliveredMarkers('ORD-LOST'), ['lost'], 'delivered once, not once per attempt');
    assert.equal(calls, 2);
    const first = firstAnswers[0] as { status: number; body: Record<string, unknown> };
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.replayed, undefined, 'the first answer is no replay');
    assert.deepEqual(answer, { ...first.body, replayed: true }, 'the retry is answered the first outcome, marked');
    const record = await storedRecord('ORD-LOST', 'lost');
    assert.deepEqual([record?.state, record?.principalId, record?.answer], ['sent', 'user:oid-lost', first.body]);

    // The same body sent straight to the route again: the same answer, and nothing sent (a second count, up to a
    // second sentinel).
    const again = await post(publisher('lost'), publishOf('ORD-LOST', 'lost'));
    assert.deepEqual([again.status, again.body], [200, { ...first.body, replayed: true }]);
    assert.deepEqual(await deliveredMarkers('ORD-LOST'), [], 'the third attempt sent nothing either');
  });

  // Takes the console's Service Bus client's own time to give up on the silenced send and send again (about 90 s:
  // its 60 s operation timeout and 30 s retry delay), which the first attempt's answer waits for.
  test('a second attempt while the first is still being sent is answered 409 with Retry-After, and the event is delivered once', async () => {
    const proxy = busProxy!;
    // The broker goes silent: the first attempt's send hangs with its record `sending`.
    proxy.silence();
    let first: Promise<Awaited<ReturnType<typeof post>>>;
    try {
      first = post(publisher('slow'), publishOf('ORD-SLOW', 'slow'));
      // Positive signal: the first attempt's record, created before its send.
      for (let seen = await storedRecord('ORD-SLOW', 'slow'); seen?.state !== 'sending'; seen = await storedRecord('ORD-SLOW', 'slow'))
        await new Promise((r) => setTimeout(r, 20));
      const second = await post(publisher('slow'), publishOf('ORD-SLOW', 'slow'));
      assert.equal(second.status, 409, JSON.stringify(second.body));
      assert.equal(second.body.code, PUBLISH_IN_FLIGHT_CODE);
      assert.match(String(second.body.detail), /being published by an earlier attempt started at .*; nothing was sent - retry in \d+ s/);
      assert.ok(Number(second.headers.get('retry-after')) >= 1, `Retry-After: ${second.headers.get('retry-after')}`);
    } finally {
      // Silenced connections are reset: the console's client sends again on a new one.
      await proxy.restore();
    }
    const firstAnswer = await first;
    assert.equal(firstAnswer.status, 200, JSON.stringify(firstAnswer.body));
    const third = await post(publisher('slow'), publishOf('ORD-SLOW', 'slow'));
    assert.deepEqual([third.status, third.body], [200, { ...firstAnswer.body, replayed: true }]);
    assert.deepEqual(await deliveredMarkers('ORD-SLOW'), ['slow'], 'delivered once');
  });

  test('an expired record, or one left `sending` past the in-flight bound (a console that died mid-send), allows a new send', async () => {
    const container = stack.store.database.container(PUBLISH_RECORDS_CONTAINER);
    const now = Date.now();
    // Records as a publish 25 hours ago left them (Cosmos's TTL not run yet, or the embedded server, which has none),
    // and as a console that died mid-send left one, PUBLISH_IN_FLIGHT_MS and a minute ago.
    const old = (marker: string, state: 'sent' | 'sending', startedAt: number, expiresAt: number): PublishRecord => {
      const messageId = deterministicMessageId('OrderPlaced', JSON.stringify(order('ORD-OLD', marker)));
      return {
        id: publishRecordId('storefrontendpoint', messageId),
        endpointId: 'storefrontendpoint',
        messageId,
        state,
        principalId: 'user:oid-old',
        requestedSessionId: null,
        startedAt: new Date(startedAt).toISOString(),
        sentAt: state === 'sent' ? new Date(startedAt).toISOString() : null,
        answer: state === 'sent' ? { endpointId: 'storefrontendpoint', eventTypeId: 'OrderPlaced', messageId, sessionId: 'ORD-OLD', correlationId: 'corr-old' } : null,
        expiresAt: new Date(expiresAt).toISOString(),
      };
    };
    await container.items.upsert(old('expired', 'sent', now - 25 * 3_600_000, now - 3_600_000));
    await container.items.upsert(old('stale', 'sending', now - PUBLISH_IN_FLIGHT_MS - 60_000, now + 3_600_000));
    for (const marker of ['expired', 'stale']) {
      const sent = await post(publisher('old'), publishOf('ORD-OLD', marker));
      assert.equal(sent.status, 200, `${marker}: ${JSON.stringify(sent.body)}`);
      assert.equal(sent.body.replayed, undefined, `${marker}: sent, not replayed`);
      assert.notEqual(sent.body.correlationId, 'corr-old');
      const record = await storedRecord('ORD-OLD', marker);
      assert.equal(record?.state, 'sent', marker);
      assert.ok(Date.parse(record!.expiresAt) > now, `${marker}: a new expiry`);
    }
    assert.deepEqual(await deliveredMarkers('ORD-OLD'), ['expired', 'stale']);
  });

  test('another principal publishing the same event is refused (409) without the first one\'s answer; nothing is sent', async () => {
    const mine = await post(publisher('owner'), publishOf('ORD-OTHER', 'other'));
    assert.equal(mine.status, 200, JSON.stringify(mine.body));
    const theirs = await post(publisher('stranger'), publishOf('ORD-OTHER', 'other'));
    assert.equal(theirs.status, 409, JSON.stringify(theirs.body));
    assert.match(String(theirs.body.detail), /published as storefrontendpoint by another principal at .*; nothing was sent/);
    assert.doesNotMatch(JSON.stringify(theirs.body), new RegExp(String(mine.body.correlationId)), 'not the first answer');
    assert.notEqual(theirs.body.code, PUBLISH_IN_FLIGHT_CODE, 'not to be retried');
    // A principal without rights on the endpoint is refused before any record is looked up, as before.
    const outsider: Principal = { kind: 'user', id: 'oid-outsider', name: 'outsider@test', roles: [], groups: [] };
    assert.equal((await post(outsider, publishOf('ORD-OTHER', 'other'))).status, 403);
    // The same payload into another session carries the same message id: refused, not answered the first outcome.
    const elsewhere = await post(publisher('owner'), { ...publishOf('ORD-OTHER', 'other'), sessionId: 'ORD-ELSEWHERE' });
    assert.equal(elsewhere.status, 409, JSON.stringify(elsewhere.body));
    assert.match(String(elsewhere.body.detail), /published into session "ORD-OTHER"/);
    assert.deepEqual(await deliveredMarkers('ORD-OTHER'), ['other']);
  });
});
