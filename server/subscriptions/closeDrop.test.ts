// Requests whose own receiver's close meets a dropped connection. In rhea-promise 3.0.3 a link close waiting for the
// broker's answer when the connection drops never settles, and the console awaited these closes unbounded: a purge
// of a dead-letter queue (POST .../actions, its receive-and-delete receiver) and a Reconcile repair of a draining
// session (POST /api/operations/reconcile, its session receiver) never answered. Measured before the bound
// (server/requestClose.ts): neither had answered 30 s after the drop. Now the close is given up at
// REQUEST_CLOSE_TIMEOUT_MS (10 s, logged) and the request answers with its result.
//
// The console's Service Bus connection runs through a TCP fault proxy (server/testing/tcpFaultProxy.ts) with the
// unmodified client. The receiver's class gets a wrapper on `close` that silences the proxy just before the real close
// runs, so the close is the call on the wire when the connection dies (the request's earlier calls are answered); the
// proxy then holds the detach unanswered (the held bytes are the signal it was sent) and is cut, which resets the
// connection. The Manager's and the heartbeat's closes: server/manager/closeDrop.test.ts.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { startTcpFaultProxy, type TcpFaultProxy } from '../testing/tcpFaultProxy.ts';
import { endProcessAfterResults } from '../../packages/sdk/e2e/harness.ts';
import { REQUEST_CLOSE_TIMEOUT_MS } from '../requestClose.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
endProcessAfterResults(); // a close abandoned, and the client's reconnects after the reset, leave timers behind

/** Above the 10 s bound by a margin for a loaded 2-core machine; a request still unanswered then hung. */
const ANSWERS_WITHIN_MS = REQUEST_CLOSE_TIMEOUT_MS + 20_000;
/** An AMQP empty frame (a heartbeat): held bytes beyond one are the close's detach, not the client's keep-alive. */
const EMPTY_FRAME_BYTES = 8;
const ep = 'billingendpoint';

let proxy: TcpFaultProxy | undefined;
const stack = useConsoleStack({
  database: 'requestclosedrop',
  env: async (started) => {
    proxy = await startTcpFaultProxy({ port: started.emulator.port });
    return {
      NIMBUS_SERVICEBUS_CONNECTION_STRING: started.emulator.connectionString.replace(`:${started.emulator.port};`, `:${proxy.port};`),
    };
  },
});

const json = (url: string, body: unknown) =>
  new Request(`http://127.0.0.1${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function within<T>(work: Promise<T>, ms: number): Promise<T | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work, new Promise<'pending'>((r) => (timer = setTimeout(() => r('pending'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `request` with the next `close` of `proto`'s class (a receiver class of the client) meeting a dropped
 * connection: silenced just before it, cut once its detach is held, then restored for what comes next. The response,
 * or 'pending' when there was none ANSWERS_WITHIN_MS after the drop.
 */
async function requestMeetsDrop(proto: { close(): Promise<void> }, request: () => Promise<Response>): Promise<Response | 'pending'> {
  const p = proxy!;
  const real = Object.getOwnPropertyDescriptor(proto, 'close')!;
  let closing!: (heldBefore: number) => void;
  const closed = new Promise<number>((r) => (closing = r));
  let armed = true;
  Object.defineProperty(proto, 'close', {
    ...real,
    value: function (this: unknown) {
      if (armed) {
        armed = false;
        p.silence();
        closing(p.silencedBytes);
      }
      return (real.value as () => Promise<void>).call(this);
    },
  });
  try {
    const answer = request();
    const before = await within(closed, 60_000);
    assert.notEqual(before, 'pending', 'the request never closed its receiver');
    for (let i = 0; p.silencedBytes <= (before as number) + EMPTY_FRAME_BYTES; i++) {
      if (i > 400) throw new Error('the close never reached the wire');
      await new Promise((r) => setTimeout(r, 50));
    }
    await p.cut();
    // Up again for what comes after (the next test's calls reconnect); the held close stays given up.
    await p.restore();
    return await within(answer, ANSWERS_WITHIN_MS);
  } finally {
    Object.defineProperty(proto, 'close', real);
  }
}

/** The client's class of `receiver`, found from an instance (the classes are not exported). */
function classOf(receiver: { close(): Promise<void> }): { close(): Promise<void> } {
  return Object.getPrototypeOf(receiver) as { close(): Promise<void> };
}

describe("requests whose receiver's close meets a dropped connection", () => {
  test('a dead-letter purge answers: its receiver close is given up at the bound', async () => {
    const actions = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/actions/route.ts');
    // A receiver that opens no link: only its class is wanted.
    const probe = stack.serviceBus.client.createReceiver(ep, ep, { subQueueType: 'deadLetter' });
    const proto = classOf(probe);
    await probe.close();
    const params = { params: Promise.resolve({ topic: ep, subscription: ep }) };
    const res = await requestMeetsDrop(proto, () => actions.POST(json('/x', { action: 'purge', confirm: `${ep}/${ep}` }), params));
    assert.notEqual(res, 'pending', `the purge had not answered ${ANSWERS_WITHIN_MS} ms after the drop`);
    const r = res as Response;
    assert.equal(r.status, 200, await r.clone().text());
    assert.deepEqual(await r.json(), { purged: 0 });
  });

  test('a Reconcile repair of a session answers: its session receiver close is given up at the bound', async () => {
    const reconcile = await import('../../app/api/operations/reconcile/route.ts');
    // A session with nothing draining: the repair takes its lock, finds nothing to do and closes the receiver.
    const sessionId = `S-${randomUUID().slice(0, 8)}`;
    const probe = await stack.serviceBus.client.acceptSession(ep, ep, `probe-${sessionId}`);
    const proto = classOf(probe);
    await probe.close();
    const body = { sessions: [{ endpointId: ep, sessionId, nextReplaySequence: 0 }] };
    const res = await requestMeetsDrop(proto, () => reconcile.POST(json('/api/operations/reconcile', body)));
    assert.notEqual(res, 'pending', `the repair had not answered ${ANSWERS_WITHIN_MS} ms after the drop`);
    const r = res as Response;
    const answer = (await r.json()) as { sessions?: Array<{ outcome: string; reason?: string }> };
    assert.equal(r.status, 200, JSON.stringify(answer));
    assert.equal(answer.sessions?.[0]?.outcome, 'unchanged', JSON.stringify(answer));
    assert.match(answer.sessions?.[0]?.reason ?? '', /no longer drains/);
  });
});

after(async () => {
  await proxy?.close();
});
