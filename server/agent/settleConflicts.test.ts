// Which 409 to a handoff settlement says "settled already" (embedded stack, sign-in on, sealed session cookies, the
// console's real route handlers): the console tags that one `code: 'settled'` (manager.ts HANDOFF_SETTLED_CODE) and
// no other, and the SDK's serve drops its result for that one only. Before, serve took every 409 as settled: a
// handoff whose sibling row no longer parses was refused 409 on every settlement, the result dropped, the handoff
// handed back by the next receive and the work - a ledger import - run again, for ever.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { seedEvent } from '../testing/seed.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';
import { CONTAINERS, statusRowId } from '../../lib/store/index.ts';
import { AgentClient, AgentRequestError } from '../../packages/sdk/src/agentClient.ts';
import { claimExpectation, claimWrite } from '../manager/manager.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const SECRET = 'settle-conflicts-test-session-secret-0123456789-abcdef';
const EP = 'erpendpoint';
const stack = useConsoleStack({
  database: 'settleconflicts',
  // Many settlements and receives from one principal: the change limit is not what is tested here.
  env: { ...oidcTestEnv(SECRET, { roles: { 'Ledger.Import': `Agent:${EP}` }, groups: {} }), NIMBUS_RATE_LIMIT_BURST: '1000' },
});
const ledger: Principal = { kind: 'user', id: 'oid-ledger', name: 'ledger@test', roles: ['Ledger.Import'], groups: [] };
const cookie = `${SESSION_COOKIE}=${sealSession(ledger, { secret: SECRET, maxAgeSeconds: 600 })}`;

/** The Agent API's route handlers as the AgentClient's fetch; every request passed to `seen`. */
function viaRoutes(seen: (url: URL) => void = () => undefined): typeof fetch {
  return (async (input: URL, init: RequestInit) => {
    seen(input);
    const url = `http://127.0.0.1:3000${input.pathname}${input.search}`;
    const request = new Request(url, { ...init, headers: { ...(init.headers as Record<string, string>), host: '127.0.0.1:3000', cookie } });
    if (input.pathname.endsWith('/receive')) return (await import('../../app/api/agent/receive/route.ts')).GET(request);
    return (await import('../../app/api/agent/settle/route.ts')).POST(request);
  }) as typeof fetch;
}

const pendingHandoff = (eventId: string, sessionId: string, base: number) =>
  seedEvent(stack.store, base, { endpointId: EP, eventId, sessionId, eventTypeId: 'InvoiceIssued', payload: { invoiceId: eventId } }, MessageType.PendingHandoffResponse, { handoffReason: 'Ledger import queued' });

describe('a 409 to a handoff settlement', () => {
  test('settled already - the same settlement again, or another once the event is no longer a pending handoff - carries code "settled"', async () => {
    const h = await pendingHandoff('INV-settled', 'S-settled', Date.now() - 60_000);
    const agent = new AgentClient({ consoleUrl: 'http://127.0.0.1:3000', fetch: viaRoutes(), retry: { attempts: 1 } });
    const where = { endpointId: EP, eventId: h.eventId, messageId: h.lastMessageId };
    assert.equal((await agent.complete(where, { journal: 'J-1' })).outcome, 'sent');
    for (const again of [() => agent.complete(where, { journal: 'J-1' }), () => agent.fail(where, 'too late')]) {
      const err = await again().then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof AgentRequestError, String(err));
      assert.deepEqual([err.status, err.code], [409, 'settled'], err.message);
    }
  });

  // An operator's resubmit of the pending handoff has claimed its row and is still being sent: the claim row is
  // Pending with no subStatus, so the settlement was refused "not a pending handoff" tagged settled - serve dropped
  // its result, and when the resubmit's send failed and its undo put the handoff back, the work ran again.
  test('another command\'s claim still unsent over the handoff: the 409 does not say "settled"', async () => {
    const h = await pendingHandoff('INV-claimed', 'S-claimed', Date.now() - 60_000);
    const row = (await stack.store.listEventRows(EP, h.eventId))[0]!;
    const claim = await stack.store.writeStatus(claimWrite({ kind: 'resubmit' }, row, row.lastMessageId, row.eventTypeId, row.payload), claimExpectation(row));
    assert.equal(claim.outcome, 'written');
    const agent = new AgentClient({ consoleUrl: 'http://127.0.0.1:3000', fetch: viaRoutes(), retry: { attempts: 1 } });
    const err = await agent.complete({ endpointId: EP, eventId: h.eventId, messageId: h.lastMessageId }, { journal: 'J-1' }).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof AgentRequestError, String(err));
    assert.deepEqual([err.status, err.code], [409, undefined], err.message);
    assert.match(err.detail, /a command is being sent for event INV-claimed/);
  });

  test('serve: a handoff whose sibling row no longer parses (409, not settled) keeps its result and is held out - the work runs once', async () => {
    const eventId = 'INV-rework';
    const base = Date.now() - 60_000;
    // An older delivery of the event in another session, damaged: it no longer parses, so no settlement can be claimed.
    await seedEvent(stack.store, base - 10_000, { endpointId: EP, eventId, sessionId: 'S-old', eventTypeId: 'InvoiceIssued', payload: { invoiceId: eventId } }, MessageType.ErrorResponse, { errorText: 'x' });
    const item = stack.store.database.container(CONTAINERS.events).item(statusRowId(eventId, 'S-old'), [EP, eventId]);
    const { resource } = await item.read<Record<string, unknown>>();
    await item.replace({ ...resource!, status: 'NotAStatus' });
    await pendingHandoff(eventId, 'S-new', base);

    const stop = new AbortController();
    // The loop's first receive after the refusal: it must exclude the event (held out), not be handed it back.
    let receivesAfterRefusal = 0;
    let excludedAfterRefusal = false;
    let refused: AgentRequestError | undefined;
    const fetch = viaRoutes((url) => {
      if (!url.pathname.endsWith('/receive') || !refused) return;
      receivesAfterRefusal++;
      excludedAfterRefusal = (url.searchParams.get('exclude') ?? '').split(',').includes(eventId);
      stop.abort();
    });
    const agent = new AgentClient({ consoleUrl: 'http://127.0.0.1:3000', fetch, retry: { attempts: 1 } });
    let imports = 0;
    const settled: boolean[] = [];
    await agent.serve(
      {
        endpointId: EP,
        waitSeconds: 1,
        concurrency: 1,
        signal: stop.signal,
        onError: (err, at) => {
          if (at.stage === 'settle' && err instanceof AgentRequestError) refused = err;
        },
        onSettled: (_h, _o, already) => settled.push(already),
      },
      async () => {
        // Bounded on the old code, where the work ran again on every receive.
        if (++imports >= 3) stop.abort();
        return { outcome: 'completed', result: { journal: `J-${imports}` } };
      },
    );
    assert.equal(imports, 1, 'the ledger import ran once');
    assert.deepEqual(settled, [], 'not reported as settled');
    assert.ok(refused, 'the 409 was reported to onError');
    assert.deepEqual([refused.status, refused.code], [409, undefined]);
    assert.match(refused.detail, /no longer parse/);
    assert.equal(receivesAfterRefusal, 1);
    assert.ok(excludedAfterRefusal, 'the next receive held the event out');
  });
});
