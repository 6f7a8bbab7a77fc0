// The agent's way to settle a handoff: ConsoleHandoffClient over real HTTP against the console's real route
// handlers, on the embedded stack (emulator, Cosmos) with a real OpenID provider issuing the service principal's
// client-credentials token. The agent holds no Service Bus client at all; the console sends the command on Manager,
// and the endpoint's main subscription receives it stamped From = Manager.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Prop } from '@nimbus/sdk/contract';
import { startConsoleTestStack, type ConsoleTestStack } from '../../../server/testing/stack.ts';
import { seedConsoleData } from '../../../server/testing/seed.ts';
import { API_AUDIENCE, startTestOidcProvider, type TestOidcProvider } from '../../../server/testing/oidcProvider.ts';
import { queryAudit } from '../../../server/audit/auditLog.ts';
import { ConsoleHandoffClient, HandoffRequestError } from '@nimbus/sdk';
import { startConsoleRouteServer, type ConsoleRouteServer } from './consoleRoutes.ts';
import { oidcProviderEnv } from '../../../server/testing/oidcEnv.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const ERP = 'erpendpoint';
let stack: ConsoleTestStack;
let idp: TestOidcProvider;
let routes: ConsoleRouteServer;
let seeded: Awaited<ReturnType<typeof seedConsoleData>>;
let closeContext: () => Promise<void>;

before(async () => {
  stack = await startConsoleTestStack('agenthttp');
  idp = await startTestOidcProvider({ redirectUris: ['http://127.0.0.1:1/auth/callback'], postLogoutRedirectUris: [] });
  // The ERP integration's app role maps to Operator on the ERP endpoint only.
  Object.assign(
    process.env,
    stack.env,
    oidcProviderEnv(idp, {
      sessionSecret: 'agent-http-test-session-secret-0123456789',
      bearerAudience: API_AUDIENCE,
      roleMap: { roles: { 'Handoff.Settle': `Operator:${ERP}` } },
    }),
  );
  seeded = await seedConsoleData(stack.store);
  routes = await startConsoleRouteServer();
  ({ closeContext } = await import('../../../server/context.ts'));
});

after(async () => {
  await routes?.close();
  await closeContext?.();
  await idp?.close();
  await stack?.close();
});

const agent = (token: () => Promise<string> = () => idp.clientCredentialsToken()) =>
  new ConsoleHandoffClient({ consoleUrl: routes.url, token, retry: { attempts: 2, initialMs: 50 } });

/** The next message on the endpoint's main subscription in `sessionId`: what the endpoint's handler would see. */
async function nextOnEndpoint(sessionId: string) {
  const receiver = await stack.serviceBus.client.acceptSession(ERP, ERP, sessionId);
  try {
    const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 15_000 });
    assert.ok(message, `a message reached ${ERP}/${ERP} in session ${sessionId}`);
    await receiver.completeMessage(message);
    return message;
  } finally {
    await receiver.close();
  }
}

describe('handoff agents settle through the console HTTP API', () => {
  test('complete with the service principal token: the console sends it on Manager, the endpoint gets it From = Manager', async () => {
    const where = { endpointId: ERP, eventId: seeded.handoff.eventId, messageId: seeded.handoff.lastMessageId };
    const settled = await agent().complete(where, { importedLines: 12 }, { note: 'ledger import done' });
    assert.equal(settled.outcome, 'sent');
    assert.equal(settled.messageType, MessageType.HandoffCompletedRequest);
    assert.equal(settled.sessionId, seeded.handoff.sessionId);

    const command = await nextOnEndpoint(seeded.handoff.sessionId);
    assert.equal(command.messageId, settled.messageId);
    assert.equal(command.applicationProperties?.[Prop.From], 'Manager');
    assert.equal(command.applicationProperties?.[Prop.MessageType], MessageType.HandoffCompletedRequest);
    assert.equal(command.applicationProperties?.[Prop.ParentMessageId], seeded.handoff.lastMessageId);

    // A retry by the agent (say its first answer was lost) is answered, not sent again.
    const again = await agent().complete(where, { importedLines: 12 });
    assert.deepEqual({ ...again }, { ...settled, outcome: 'duplicate' });

    const log = await queryAudit(stack.store.database, { user: idp.serviceClient.id, action: 'handoff', pageSize: 5 });
    assert.ok(log.items.length >= 1);
    assert.ok(log.items.every((e) => e.actorKind === 'service' && e.roles === `Operator:${ERP}`));
  });

  test('fail with the error text: the endpoint gets a HandoffFailedRequest carrying it', async () => {
    const where = { endpointId: ERP, eventId: seeded.handoff2.eventId, messageId: seeded.handoff2.lastMessageId };
    const settled = await agent().fail(where, 'ledger rejected 3 lines', 'LedgerRejected');
    assert.equal(settled.outcome, 'sent');
    const command = await nextOnEndpoint(seeded.handoff2.sessionId);
    assert.equal(command.applicationProperties?.[Prop.MessageType], MessageType.HandoffFailedRequest);
    assert.equal(command.applicationProperties?.[Prop.From], 'Manager');
  });

  test('refusals arrive as HandoffRequestError with the console reason: another endpoint 403, a bad token 401, the wrong message 409', async () => {
    const expect = async (p: Promise<unknown>, status: number, detail: RegExp) =>
      assert.rejects(p, (err: unknown) => {
        assert.ok(err instanceof HandoffRequestError, String(err));
        assert.equal(err.status, status, err.message);
        assert.match(err.detail, detail);
        return true;
      });
    await expect(
      agent().complete({ endpointId: 'billingendpoint', eventId: seeded.failed.eventId, messageId: 'm' }),
      403,
      /Operator role on endpoint billingendpoint/,
    );
    await expect(agent(() => Promise.resolve('not.a.token')).complete({ endpointId: ERP, eventId: seeded.handoff.eventId, messageId: 'x' }), 401, /./);
    const fresh = await seedConsoleData(stack.store, Date.now() - 60_000, '-409');
    await expect(
      agent().fail({ endpointId: ERP, eventId: fresh.handoff.eventId, messageId: `${fresh.handoff.lastMessageId}-other` }, 'x'),
      409,
      /is not the event's pending handoff/,
    );
  });
});
