// The Agent API over real HTTP (the console's real route handlers behind a loopback server) on the embedded stack
// (emulator, Cosmos) with a real OpenID provider issuing the agent's client-credentials token, whose app role maps
// to the Agent role on the ERP and storefront endpoints only. The SDK's AgentClient and plain fetch are the callers.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeBody, MessageType, Prop } from '@nimbus/sdk/contract';
import { startConsoleTestStack, type ConsoleTestStack } from '../../../server/testing/stack.ts';
import { seedConsoleData, seedEvent } from '../../../server/testing/seed.ts';
import { API_AUDIENCE, startTestOidcProvider, type TestOidcProvider } from '../../../server/testing/oidcProvider.ts';
import { queryAudit } from '../../../server/audit/auditLog.ts';
import { oidcProviderEnv } from '../../../server/testing/oidcEnv.ts';
import { startRouteServer, type RouteServer } from '../../../server/testing/routeServer.ts';
import { AgentClient, AgentRequestError, type HandoffWorkResult, type PendingHandoff, type ServeOptions } from '@nimbus/sdk';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const ERP = 'erpendpoint';
const STOREFRONT = 'storefrontendpoint';
const AGENT_ROLES = { roles: { 'Handoff.Settle': [`Agent:${ERP}`, `Agent:${STOREFRONT}`] } };
let stack: ConsoleTestStack;
let idp: TestOidcProvider;
let server: RouteServer;
let seeded: Awaited<ReturnType<typeof seedConsoleData>>;
let closeContext: () => Promise<void>;

before(async () => {
  stack = await startConsoleTestStack('agentapi');
  idp = await startTestOidcProvider({ redirectUris: ['http://127.0.0.1:1/auth/callback'], postLogoutRedirectUris: [] });
  Object.assign(
    process.env,
    stack.env,
    oidcProviderEnv(idp, { sessionSecret: 'agent-api-test-session-secret-0123456789', bearerAudience: API_AUDIENCE, roleMap: AGENT_ROLES }),
  );
  seeded = await seedConsoleData(stack.store);
  server = await startRouteServer();
  ({ closeContext } = await import('../../../server/context.ts'));
});

after(async () => {
  await server?.close();
  await closeContext?.();
  await idp?.close();
  await stack?.close();
});

const token = () => idp.clientCredentialsToken();
const agent = () => new AgentClient({ consoleUrl: server.url, token, retry: { attempts: 2, initialMs: 50 } });

/** One call with the provider's token (cached by the test provider until near expiry), or with `bearer` (one token for many calls: no token request between them). */
async function call(method: string, path: string, body?: unknown, bearer?: string): Promise<Response> {
  return fetch(new URL(path, server.url), {
    method,
    headers: { authorization: `Bearer ${bearer ?? (await token())}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** A pending handoff on the storefront endpoint (which no other test hands off to), enqueued at `at`. */
const handoffAt = (eventId: string, at: number) =>
  seedEvent(stack.store, at, { endpointId: STOREFRONT, eventId, sessionId: `S-${eventId}`, eventTypeId: 'OrderPlaced', payload: { orderId: eventId } }, MessageType.PendingHandoffResponse, {
    handoffReason: 'import queued',
  });

type Signal = (what: string) => void;

/**
 * Runs serve on the storefront endpoint, one handoff at a time (each receive is then handed the oldest handoff it
 * does not exclude), until a hook or the work calls `signal`; what it was called with.
 */
async function serveUntilSignal(
  hooks: (signal: Signal) => Pick<ServeOptions, 'onError' | 'onSettled'>,
  work: (h: PendingHandoff, signal: Signal) => Promise<HandoffWorkResult>,
): Promise<string> {
  const stop = new AbortController();
  let signal!: Signal;
  const done = new Promise<string>((resolve) => (signal = resolve));
  const loop = agent().serve({ endpointId: STOREFRONT, concurrency: 1, waitSeconds: 1, signal: stop.signal, ...hooks(signal) }, (h) => work(h, signal));
  try {
    return await done;
  } finally {
    stop.abort();
    await loop;
  }
}

async function refusedWith(p: Promise<unknown>, status: number, detail?: RegExp): Promise<AgentRequestError> {
  const err = await p.then(
    () => assert.fail(`expected a ${status} refusal`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof AgentRequestError, String(err));
  assert.equal(err.status, status, err.message);
  if (detail) assert.match(err.detail, detail);
  return err;
}

describe('Agent API', () => {
  test('the catalog holds the granted endpoints and their event types with schemas, nothing else', async () => {
    const c = await agent().catalog();
    assert.deepEqual(c.endpoints.map((e) => e.id).sort(), [ERP, STOREFRONT]);
    const types = c.eventTypes.map((t) => t.id);
    assert.ok(types.includes('InvoiceIssued') && types.includes('OrderPlaced'), types.join(','));
    assert.ok(c.eventTypes.find((t) => t.id === 'OrderPlaced')?.schema, 'the JSON schema is part of the catalog');
  });

  test('non-claiming receive: the same handoff until it is settled, never after; a second settlement is 409', async () => {
    const a = agent();
    const first = await a.receive({ endpointId: ERP, waitSeconds: 0 });
    assert.ok(first);
    assert.equal(first.eventId, seeded.handoff.eventId);
    assert.equal(first.messageId, seeded.handoff.lastMessageId);
    assert.equal(first.handoff.externalJobId, 'JOB-77');
    assert.equal(first.handoff.overdue, false);
    assert.deepEqual(first.payload, { invoiceId: 'INV-1', orderId: 'ORD-100' });
    // Nothing was claimed: asked again, and by another client, it is the same event.
    assert.equal((await agent().receive({ endpointId: ERP, waitSeconds: 0 }))?.eventId, first.eventId);
    // A worker holding it asks for the next one.
    const next = await a.receive({ endpointId: ERP, waitSeconds: 0, exclude: [first.eventId] });
    assert.equal(next?.eventId, seeded.handoff2.eventId);
    assert.equal(next?.handoff.overdue, true, 'past its expected-by it is still handed out, flagged overdue');

    const settled = await a.complete(first, { lines: 3 }, { note: 'imported by the test agent' });
    assert.equal(settled.outcome, 'sent');
    assert.equal(settled.messageType, MessageType.HandoffCompletedRequest);
    // Settled: never handed out again.
    for (let i = 0; i < 3; i++) assert.equal((await a.receive({ endpointId: ERP, waitSeconds: 0 }))?.eventId, seeded.handoff2.eventId);
    await refusedWith(a.complete(first), 409, /already settled/);
    await refusedWith(a.fail(first, 'too late'), 409, /not a pending handoff/);

    // The command went out on Manager to the endpoint, as the operator's route sends it.
    const receiver = await stack.serviceBus.client.acceptSession(ERP, ERP, seeded.handoff.sessionId);
    try {
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 15_000 });
      assert.equal(m?.messageId, settled.messageId);
      assert.equal(m?.applicationProperties?.[Prop.From], 'Manager');
      if (m) await receiver.completeMessage(m);
    } finally {
      await receiver.close();
    }
    const trail = await stack.store.listAudits(seeded.handoff.eventId, { pageSize: 10 });
    assert.ok(trail.items.some((e) => e.type === 'CompleteHandoff' && e.auditor === idp.serviceClient.id), 'the agent is the auditor');
  });

  test('receive long-polls: 204 after the wait, and a handoff that arrives during the wait is answered at once', async () => {
    const a = agent();
    const started = Date.now();
    assert.equal(await a.receive({ endpointId: ERP, waitSeconds: 1, exclude: [seeded.handoff2.eventId] }), null);
    assert.ok(Date.now() - started >= 900, 'it waited');
    const waiting = a.receive({ endpointId: ERP, eventTypeId: 'InvoiceIssued', waitSeconds: 25, exclude: [seeded.handoff2.eventId] });
    await new Promise((r) => setTimeout(r, 1_500));
    const common = {
      endpointId: ERP,
      eventId: 'evt-handoff-late',
      sessionId: 'INV-9',
      messageType: MessageType.PendingHandoffResponse,
      eventTypeId: 'InvoiceIssued',
      parentMessageId: 'evt-handoff-late-req',
      originatingMessageId: 'evt-handoff-late-req',
      correlationId: null,
      from: ERP,
      to: 'Resolver',
      enqueuedAt: new Date().toISOString(),
      handoffReason: 'late import',
      externalJobId: 'JOB-99',
      expectedBy: new Date(Date.now() + 60_000).toISOString(),
    };
    await stack.store.recordOutcome({ history: { ...common, messageId: 'evt-handoff-late-res' }, status: { ...common, messageId: 'evt-handoff-late-res' } });
    const got = await waiting;
    assert.equal(got?.eventId, 'evt-handoff-late');
  });

  test('serve: a handoff whose settlement is refused for good is worked once, the loop goes on; an exception is settled clipped', async () => {
    // On the storefront endpoint, which no other test hands off to. The refused one is the older: one loop at a time
    // (concurrency 1) is handed the oldest handoff it does not exclude, so a loop that forgets the refusal is handed
    // it back before it ever reaches the second - which is then the signal that the loop went on receiving.
    const base = Date.now() - 600_000;
    const refusedOne = await handoffAt('evt-serve-refused', base);
    const thrower = await handoffAt('evt-serve-throws', base + 60_000);
    const worked: string[] = [];
    const errors: Array<{ eventId: string | undefined; error: unknown }> = [];
    const outcome = await serveUntilSignal(
      (signal) => ({
        onError: (error, at) => {
          errors.push({ eventId: at.eventId, error });
          if (at.eventId === thrower.eventId) signal('the exception was refused');
        },
        onSettled: (h, outcome, already) => signal(`${h.eventId} settled ${outcome}${already ? ' already' : ''}`),
      }),
      async (h, signal) => {
        worked.push(h.eventId);
        if (h.eventId === refusedOne.eventId) {
          if (worked.filter((id) => id === h.eventId).length > 1) signal('the refused handoff was worked again');
          // Over the console's 4,000 characters: refused with 400, the same way every time.
          return { outcome: 'failed', errorText: 'x'.repeat(5_000) };
        }
        throw new RangeError(`ledger said: ${'y'.repeat(5_000)}`);
      },
    );
    assert.equal(outcome, `${thrower.eventId} settled failed`, `worked: ${worked.join(',')}`);
    assert.deepEqual(worked, [refusedOne.eventId, thrower.eventId], 'the refused handoff was worked once');
    const refusal = errors.find((e) => e.eventId === refusedOne.eventId)?.error;
    assert.ok(refusal instanceof AgentRequestError && refusal.status === 400, String(refusal));
    assert.match(refusal.detail, /errorText/);
    // The exception's message went out clipped to the console's limit, marked as clipped.
    const receiver = await stack.serviceBus.client.acceptSession(STOREFRONT, STOREFRONT, thrower.sessionId);
    try {
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 15_000 });
      const error = decodeBody(m?.body).content.ErrorContent;
      const text = error?.ErrorText ?? '';
      assert.ok(text.length <= 4_000 && text.startsWith('ledger said: yyy'), `${text.length} characters`);
      assert.ok(text.endsWith('\n...[TRUNCATED]...'), `ends ${JSON.stringify(text.slice(-30))}`);
      assert.equal(error?.ErrorType, 'RangeError');
      if (m) await receiver.completeMessage(m);
    } finally {
      await receiver.close();
    }
  });

  test('serve: a handoff its work leaves (null) is held out of its receives, not handed straight back; the loop goes on to the next', async () => {
    // As above: one loop at a time is handed the oldest handoff it does not exclude, so a loop that does not hold
    // the left one is handed it back at once (a busy loop against the console) and never reaches the newer one.
    // The earlier serve test's refused handoff is still pending, older still: this loop leaves it too.
    const base = Date.now() - 500_000;
    const left = await handoffAt('evt-serve-left', base);
    const next = await handoffAt('evt-serve-next', base + 60_000);
    const worked: string[] = [];
    const outcome = await serveUntilSignal(
      (signal) => ({ onSettled: (h, outcome) => signal(`${h.eventId} settled ${outcome}`) }),
      async (h, signal) => {
        worked.push(h.eventId);
        if (h.eventId === next.eventId) return { outcome: 'completed', result: { imported: true } };
        if (worked.filter((id) => id === h.eventId).length > 1) signal(`${h.eventId} was worked again`);
        return null;
      },
    );
    assert.equal(outcome, `${next.eventId} settled completed`, `worked: ${worked.join(',')}`);
    assert.equal(worked.filter((id) => id === left.eventId).length, 1, `worked: ${worked.join(',')}`);
    const pending = await agent().receive({ endpointId: STOREFRONT, waitSeconds: 0, exclude: ['evt-serve-refused'] });
    assert.equal(pending?.eventId, left.eventId, 'the left handoff is still pending');
  });

  test('receive excludes an event id with a comma in it (sent whole as excludeId), and the other ids as before', async () => {
    // The oldest storefront handoff, settled at the end so that no later test is handed it. Before, the SDK sent
    // "ORD,9" in exclude, which the console split into "ORD" and "9": it was handed back.
    const h = await handoffAt('ORD,9', Date.now() - 86_400_000);
    const a = agent();
    let settled = false;
    try {
      assert.equal((await a.receive({ endpointId: STOREFRONT, waitSeconds: 0 }))?.eventId, 'ORD,9', 'the oldest');
      const next = await a.receive({ endpointId: STOREFRONT, waitSeconds: 0, exclude: ['ORD,9', 'evt-serve-refused'] });
      assert.ok(next?.eventId !== 'ORD,9' && next?.eventId !== 'evt-serve-refused', `handed out ${next?.eventId}`);
      assert.equal((await a.complete({ endpointId: STOREFRONT, eventId: 'ORD,9', messageId: h.lastMessageId })).outcome, 'sent');
      settled = true;
    } finally {
      // A failed assertion above must not leave the oldest storefront handoff for the later tests to be handed.
      if (!settled) await a.complete({ endpointId: STOREFRONT, eventId: 'ORD,9', messageId: h.lastMessageId }).catch(() => undefined);
    }
  });

  test('serve: a settlement whose token the console refuses (401) is sent again with a new token, not given up; its answer then lost, the 409 is taken as settled', async () => {
    // The oldest storefront handoff. While it is worked, the token the provider caches turns into one the console
    // refuses (a real token, its signature broken: as a revoked one, 401), which the provider answers until it is
    // told to refresh. Before, the 401 gave the handoff up, its result dropped, and without the refresh every later
    // call was refused too (the second report ends the window; with a provider whose next token was good, the next
    // receive handed the handoff out again and the work ran twice: agentServe.test.ts). The new
    // token's answer is then lost on the way back (the settlement landed): the client sends it again, and the
    // console's 409 (already settled, the same settlement) is taken as settled - one receipt in the event's trail.
    const h = await handoffAt('evt-serve-401', Date.now() - 2 * 86_400_000);
    let cached: string | undefined;
    const asks: boolean[] = [];
    const provider = async (_signal: AbortSignal, request?: { refresh: boolean }) => {
      asks.push(request?.refresh ?? false);
      if (request?.refresh) cached = await idp.clientCredentialsToken({ fresh: true });
      return cached ?? token();
    };
    const revoke = async () => {
      const good = await token();
      cached = `${good.slice(0, -8)}${good.endsWith('AAAAAAAA') ? 'BBBBBBBB' : 'AAAAAAAA'}`;
    };
    let loseNext = true;
    const losingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (loseNext && String(input).endsWith('/api/agent/settle') && response.ok) {
        loseNext = false;
        throw new TypeError('fetch failed (the test lost the answer)');
      }
      return response;
    };
    let worked = 0;
    const reports: Array<[string, string | undefined, number | undefined]> = [];
    const stop = new AbortController();
    let signal!: (what: string) => void;
    const done = new Promise<string>((resolve) => (signal = resolve));
    const client = new AgentClient({ consoleUrl: server.url, token: provider, fetch: losingFetch, retry: { attempts: 2, initialMs: 50 } });
    const loop = client.serve(
      {
        endpointId: STOREFRONT,
        concurrency: 1,
        waitSeconds: 1,
        signal: stop.signal,
        onError: (error, at) => {
          reports.push([at.stage, at.eventId, (error as { status?: number }).status]);
          if (reports.length > 1) signal('reported again');
        },
        onSettled: (settled, outcome, already) => signal(`${settled.eventId} settled ${outcome}${already ? ' already' : ''}`),
      },
      async (handoff) => {
        if (handoff.eventId !== h.eventId) return null;
        if (++worked > 1) signal(`${handoff.eventId} was worked again`);
        await revoke();
        return { outcome: 'completed', result: { imported: true } };
      },
    );
    let outcome: string;
    try {
      outcome = await done;
    } finally {
      stop.abort();
      await loop;
    }
    assert.equal(outcome, `${h.eventId} settled completed already`);
    assert.equal(worked, 1, 'the work ran once');
    assert.deepEqual(reports, [['token', h.eventId, 401]]);
    assert.equal(asks.filter(Boolean).length, 1, 'told to refresh once, after the 401');
    const trail = await stack.store.listAudits(h.eventId, { pageSize: 10 });
    assert.equal(trail.items.filter((e) => e.type === 'CompleteHandoff').length, 1, 'one settlement sent');
    const next = await agent().receive({ endpointId: STOREFRONT, waitSeconds: 0, exclude: ['evt-serve-refused', 'evt-serve-left'] });
    assert.notEqual(next?.eventId, h.eventId, 'settled: not handed out again');
  });

  test('publish is validated against the catalog schema (400 naming the problem), then sent as the endpoint', async () => {
    const a = agent();
    const bad = await refusedWith(
      a.publish({ endpointId: STOREFRONT, eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-A1', customerId: 'C-1', lines: [], total: 'ten', currency: 'EUR' } }),
      400,
      /does not match the OrderPlaced schema: total: /,
    );
    assert.match(bad.detail, /number/);
    await refusedWith(a.publish({ eventTypeId: 'OrderPlaced', payload: {} }), 400, /name endpointId/);
    await refusedWith(a.publish({ endpointId: STOREFRONT, eventTypeId: 'InvoiceIssued', payload: {} }), 400, /does not produce InvoiceIssued/);
    const order = { orderId: 'ORD-A2', customerId: 'C-1', lines: [{ sku: 'X', quantity: 1, unitPrice: 5 }], total: 5, currency: 'EUR' };
    const published = await a.publish({ endpointId: STOREFRONT, eventTypeId: 'OrderPlaced', payload: order });
    assert.equal(published.sessionId, 'ORD-A2', 'the session key comes from the catalog');
    const receiver = await stack.serviceBus.client.acceptSession('billingendpoint', 'billingendpoint', 'ORD-A2');
    try {
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 15_000 });
      assert.equal(m?.messageId, published.messageId);
      assert.equal(m?.applicationProperties?.[Prop.OriginatingFrom], STOREFRONT);
      if (m) await receiver.completeMessage(m);
    } finally {
      await receiver.close();
    }
  });

  test('an Agent identity is refused on an endpoint it is not granted, on operator actions and on the console reads', async () => {
    const a = agent();
    await refusedWith(a.receive({ endpointId: 'billingendpoint', waitSeconds: 0 }), 403, /agent\.receive needs the Agent role/);
    await refusedWith(a.settle({ endpointId: 'billingendpoint', eventId: seeded.failed.eventId, messageId: 'm', outcome: 'completed' }), 403);
    await refusedWith(a.publish({ endpointId: 'billingendpoint', eventTypeId: 'InvoiceIssued', payload: { invoiceId: 'I' } }), 403);
    const resubmit = await call('POST', `/api/event/resubmit/${ERP}/${seeded.handoff2.eventId}`);
    assert.equal(resubmit.status, 403);
    assert.match(((await resubmit.json()) as { detail: string }).detail, /only the Agent role there/);
    assert.equal((await call('POST', `/api/event/skip/${ERP}/${seeded.handoff2.eventId}`)).status, 403);
    assert.equal((await call('POST', `/api/event/handoff/complete/${ERP}/${seeded.handoff2.eventId}/${seeded.handoff2.lastMessageId}`, {})).status, 403);
    assert.equal((await call('GET', `/api/endpoints/${ERP}/events/${seeded.handoff2.eventId}`)).status, 403);
    assert.equal((await call('GET', '/api/endpoints')).status, 403);
    assert.equal((await call('GET', '/api/search?q=evt')).status, 403);
    const bad = await call('POST', '/api/agent/settle', { endpointId: ERP, eventId: 'e', messageId: 'm', outcome: 'failed' });
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { detail: string }).detail, /errorText is required/);
  });

  test('every call is audited with the agent as actor', async () => {
    const log = await queryAudit(stack.store.database, { user: idp.serviceClient.id, pageSize: 200 });
    const actions = new Set(log.items.map((e) => `${e.action}:${e.outcome}`));
    for (const want of ['agent.catalog:succeeded', 'agent.receive:succeeded', 'agent.settle:succeeded', 'agent.settle:failed', 'agent.publish:succeeded', 'agent.publish:failed', 'agent.receive:denied'])
      assert.ok(actions.has(want), `${want} in ${[...actions].join(' ')}`);
    const handedOut = log.items.find((e) => e.action === 'agent.receive' && (e.details as { handedOut?: string } | null)?.handedOut === seeded.handoff.eventId);
    assert.ok(handedOut, 'a receive names the event it handed out');
    assert.equal(handedOut.actorKind, 'service');
  });

  test('per-agent limits: calls in flight and calls per minute answer 429', async () => {
    const saved = { c: process.env.NIMBUS_AGENT_MAX_CONCURRENT, b: process.env.NIMBUS_AGENT_RATE_LIMIT_BURST, m: process.env.NIMBUS_AGENT_RATE_LIMIT_PER_MINUTE };
    try {
      process.env.NIMBUS_AGENT_MAX_CONCURRENT = '1';
      // Only the bound in flight is under test here: a call rate that cannot run out, so every 429 below is that one.
      process.env.NIMBUS_AGENT_RATE_LIMIT_BURST = '100000';
      const bearer = await token();
      const inFlightRefusal = /at most 1 Agent API calls of one agent at a time; 1 are in flight/;
      // A long-poll holds the agent's one slot while catalog calls are made until one is refused. Which of the two
      // the server admits first is not ours to choose: on a loaded machine the first catalog call can get in before
      // the long-poll, which is then the call refused. That is the same bound at work, but the held call must be
      // seen to run its course, so the long-poll is started again (a few times at most).
      let refused: Response | undefined;
      let held: Response | undefined;
      for (let attempt = 0; attempt < 5 && !(refused && held?.status === 204); attempt++) {
        refused = undefined;
        let settled = false;
        const holding = call('GET', `/api/agent/receive?endpointId=${ERP}&waitSeconds=4&exclude=${seeded.handoff2.eventId},evt-handoff-late`, undefined, bearer).finally(() => {
          settled = true;
        });
        // Polled while the long-poll is pending (its end is the signal, not a count of tries), never once it is over.
        while (!settled && !refused) {
          await new Promise((res) => setTimeout(res, 50));
          const r = await call('GET', '/api/agent/catalog', undefined, bearer);
          if (r.status === 429) refused = r;
          else assert.equal(r.status, 200, await r.text());
        }
        held = await holding;
        if (held.status === 429) {
          // The long-poll was the second call: refused for the slot the catalog call held, nothing else.
          assert.match(((await held.json()) as { detail: string }).detail, inFlightRefusal);
          refused = undefined;
        }
      }
      assert.ok(refused, 'a second call while one is in flight is refused');
      assert.match(((await refused.json()) as { detail: string }).detail, inFlightRefusal);
      assert.equal(held?.status, 204, 'the call in flight runs its course');
      process.env.NIMBUS_AGENT_MAX_CONCURRENT = '8';
      process.env.NIMBUS_AGENT_RATE_LIMIT_BURST = '2';
      process.env.NIMBUS_AGENT_RATE_LIMIT_PER_MINUTE = '1';
      const statuses: number[] = [];
      let limited: Response | undefined;
      for (let i = 0; i < 4; i++) {
        const r = await call('GET', '/api/agent/catalog', undefined, bearer);
        statuses.push(r.status);
        if (r.status === 429) limited ??= r;
      }
      assert.ok(limited, statuses.join(','));
      assert.match(((await limited.json()) as { detail: string }).detail, /too many Agent API calls in a short time/);
    } finally {
      for (const [k, v] of [['NIMBUS_AGENT_MAX_CONCURRENT', saved.c], ['NIMBUS_AGENT_RATE_LIMIT_BURST', saved.b], ['NIMBUS_AGENT_RATE_LIMIT_PER_MINUTE', saved.m]] as const)
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
  });
});
