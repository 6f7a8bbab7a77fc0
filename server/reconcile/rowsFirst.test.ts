// Reconcile's rows do not wait for the broker. On the emulator (through a TCP proxy the test can silence) and the
// embedded Cosmos server, with the real clients and the real route: while the broker answers nothing, so the session
// scan hangs on its first session lock, `GET ?part=rows` answers the row findings (the seeded overdue handoff), and the
// scan (`?part=sessions`) answers at its time budget, cut short (`scanLimited`), instead of after the client's
// minutes of retries. Before that, with the broker answering, a GET without `part` still answers both parts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { startTcpFaultProxy, type TcpFaultProxy } from '../testing/tcpFaultProxy.ts';
import { seedConsoleData } from '../testing/seed.ts';
import type { ReconcilePreview } from '../../components/topology/opsApi.ts';
import type { reconcileSessionsPreview } from './routes.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let stack: ConsoleTestStack;
let busProxy: TcpFaultProxy;
let closeContext: (() => Promise<void>) | undefined;

before(async () => {
  stack = await startConsoleTestStack('reconcilerowsfirst');
  busProxy = await startTcpFaultProxy({ port: stack.emulator.port });
  const proxied = stack.emulator.connectionString.replace(`:${stack.emulator.port};`, `:${busProxy.port};`);
  assert.notEqual(proxied, stack.emulator.connectionString, 'the connection string names the emulator port');
  // The console's broker connection goes through the proxy; its store connection does not.
  Object.assign(process.env, stack.env, { NIMBUS_SERVICEBUS_CONNECTION_STRING: proxied });
  ({ closeContext } = await import('../context.ts'));
});
after(async () => {
  // Silenced connections are reset, so the console's client closes at once instead of waiting on a dead path.
  await busProxy?.restore();
  await closeContext?.();
  await busProxy?.close();
  await stack?.close();
});

type SessionsAnswer = Awaited<ReturnType<typeof reconcileSessionsPreview>>;

describe('reconcile: the rows answer never waits for the session scan', () => {
  test('with the broker silent, the rows come at once and the session scan answers cut short at its budget', async () => {
    const route = await import('../../app/api/operations/reconcile/route.ts');
    const get = (query: string) => route.GET(new Request(`http://127.0.0.1/api/operations/reconcile${query}`));
    const seeded = await seedConsoleData(stack.store);

    // Broker up: the answer without `part` (what clients from before the split read) holds both parts.
    // (That a whole scan says so, scanLimited false, is checked in draining.test.ts.)
    const whole = (await (await get('')).json()) as ReconcilePreview;
    assert.ok(whole.overdueHandoffs.some((h) => h.eventId === seeded.handoff2.eventId), JSON.stringify(whole.overdueHandoffs));
    assert.equal(whole.draining.error, undefined);

    // The broker goes silent: every session lock the scan asks for hangs (the client would retry for minutes).
    busProxy.silence();
    let scanAnswered = false;
    const scan = get('?part=sessions').then(async (r) => {
      scanAnswered = true;
      return { status: r.status, body: (await r.json()) as SessionsAnswer };
    });
    // Callers asking for the same endpoints while a scan runs share it: one scan locks sessions, not one per caller.
    const { reconcileSessionsPreview } = await import('./routes.ts');
    const { getContext } = await import('../context.ts');
    const ctx = await getContext();
    const joined = reconcileSessionsPreview(ctx);
    assert.equal(reconcileSessionsPreview(ctx), joined, 'a second caller joins the running scan');
    const rowsResponse = await get('?part=rows');
    assert.equal(rowsResponse.status, 200);
    const rows = (await rowsResponse.json()) as Record<string, unknown> & Pick<ReconcilePreview, 'overdueHandoffs' | 'stale' | 'stuck'>;
    assert.equal(scanAnswered, false, 'the rows answered while the session scan was still waiting for the broker');
    assert.ok(rows.overdueHandoffs.some((h) => h.eventId === seeded.handoff2.eventId), 'the overdue handoff is in the rows answer');
    assert.ok(Array.isArray(rows.stale) && Array.isArray(rows.stuck));
    assert.equal('draining' in rows, false, 'the rows answer does not carry the session scan');

    // The scan gives up at its budget and says so, instead of holding the answer for the client's retries.
    const { status, body } = await scan;
    assert.equal(status, 200);
    assert.equal(body.draining.scanLimited, true, JSON.stringify(body.draining));
    assert.ok(body.draining.checked < body.draining.candidates, JSON.stringify(body.draining));
    assert.deepEqual(body.draining.sessions, []);
    assert.equal((await joined).generatedAt, body.generatedAt, 'the route and the later callers got the one scan');
  });

  test('the session scan counts against the caller\'s rate limit; the rows do not', async () => {
    await busProxy.restore();
    const route = await import('../../app/api/operations/reconcile/route.ts');
    const get = (query: string) => route.GET(new Request(`http://127.0.0.1/api/operations/reconcile${query}`));
    const saved = { burst: process.env.NIMBUS_RATE_LIMIT_BURST, perMinute: process.env.NIMBUS_RATE_LIMIT_PER_MINUTE };
    Object.assign(process.env, { NIMBUS_RATE_LIMIT_BURST: '1', NIMBUS_RATE_LIMIT_PER_MINUTE: '1' });
    try {
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await get('?part=sessions')).status);
      assert.equal(statuses[2], 429, `a burst of one: ${statuses.join(', ')}`);
      assert.equal((await get('?part=rows')).status, 200);
    } finally {
      for (const [name, value] of [['NIMBUS_RATE_LIMIT_BURST', saved.burst], ['NIMBUS_RATE_LIMIT_PER_MINUTE', saved.perMinute]] as const)
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
    }
  });

  test('a part the route does not know is refused with 400', async () => {
    const route = await import('../../app/api/operations/reconcile/route.ts');
    const res = await route.GET(new Request('http://127.0.0.1/api/operations/reconcile?part=everything'));
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { detail: string }).detail, /part/);
  });
});
