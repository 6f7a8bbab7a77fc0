// Issue 13 item 7, end to end: a handoff agent holding only the rights the model gives it cannot make an endpoint
// skip or resubmit anything, yet settles its handoff. The emulator verifies SAS; the topology's shared access
// policies are exactly packages/sdk/src/topology/rights.ts's sasPolicies(); the agent has none of them (the model gives it no bus
// right), or at worst a Listen-only policy handed out by mistake. Its SkipRequest and ResubmissionRequest, on
// Manager or straight on the endpoint topic, are refused by the broker; the console, called over HTTP with the
// agent's service-principal token, sends the settlement; the endpoint's session then holds the settlement first.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { isServiceBusError, ServiceBusClient, type ServiceBusMessage } from '@azure/service-bus';
import { encodeBody, MessageType, Prop, Topic, toWireProperties } from '@nimbus/sdk/contract';
import { deriveRights, deriveTopology, sasPolicies, type SasPolicy } from '@nimbus/sdk/topology';
import { startConsoleTestStack, type ConsoleTestStack } from '../../../server/testing/stack.ts';
import { seedConsoleData } from '../../../server/testing/seed.ts';
import { API_AUDIENCE, startTestOidcProvider, type TestOidcProvider } from '../../../server/testing/oidcProvider.ts';
import { ConsoleHandoffClient } from '@nimbus/sdk';
import { startConsoleRouteServer, type ConsoleRouteServer } from './consoleRoutes.ts';
import { oidcProviderEnv } from '../../../server/testing/oidcEnv.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const ERP = 'erpendpoint';
let stack: ConsoleTestStack;
let idp: TestOidcProvider;
let routes: ConsoleRouteServer;
let seeded: Awaited<ReturnType<typeof seedConsoleData>>;
let closeContext: () => Promise<void>;
/** Keys of the policies created from the model, by policy name. */
const keys = new Map<string, string>();
const clients: ServiceBusClient[] = [];

const newKey = () => randomBytes(32).toString('base64');

before(async () => {
  stack = await startConsoleTestStack('agentrights');
  // The model's shared access policies, created on their topics through the admin plane (with the namespace key).
  const policies = sasPolicies(deriveRights(deriveTopology(stack.catalog)));
  assert.ok(!policies.some((p) => p.identity.startsWith('agent:')), 'the model gives agents no policy');
  const byTopic = new Map<string, SasPolicy[]>();
  for (const p of policies) if (p.entity.kind === 'topic') byTopic.set(p.entity.topic, [...(byTopic.get(p.entity.topic) ?? []), p]);
  // Plus the mistake a deployment might make: a Listen-only policy for the agent, on its endpoint's topic and on Manager.
  const mistaken = (topic: string): SasPolicy => ({ identity: `agent:${ERP}`, name: `agent-listen-${topic}`, entity: { kind: 'topic', topic }, rights: ['Listen'] });
  for (const topic of [ERP, Topic.Manager]) byTopic.set(topic, [...(byTopic.get(topic) ?? []), mistaken(topic)]);
  for (const [topic, list] of byTopic) {
    const properties = await stack.serviceBus.admin.getTopic(topic);
    const authorizationRules = list.map((p) => {
      const key = newKey();
      keys.set(p.name, key);
      return { claimType: 'SharedAccessKey', keyName: p.name, accessRights: p.rights.filter((r) => r !== 'Manage'), primaryKey: key, secondaryKey: newKey() };
    });
    await stack.serviceBus.admin.updateTopic({ ...properties, authorizationRules });
  }

  idp = await startTestOidcProvider({ redirectUris: ['http://127.0.0.1:1/auth/callback'], postLogoutRedirectUris: [] });
  Object.assign(
    process.env,
    stack.env,
    oidcProviderEnv(idp, {
      sessionSecret: 'agent-rights-test-session-secret-0123456789',
      bearerAudience: API_AUDIENCE,
      roleMap: { roles: { 'Handoff.Settle': `Operator:${ERP}` } },
    }),
  );
  seeded = await seedConsoleData(stack.store);
  routes = await startConsoleRouteServer();
  ({ closeContext } = await import('../../../server/context.ts'));
});

after(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await routes?.close();
  await closeContext?.();
  await idp?.close();
  await stack?.close();
});

/** A client with one shared access policy's key on the stack's emulator. */
function busAs(keyName: string, key: string): ServiceBusClient {
  const endpoint = /^Endpoint=[^;]+/.exec(stack.emulator.connectionString)![0];
  const client = new ServiceBusClient(`${endpoint};SharedAccessKeyName=${keyName};SharedAccessKey=${key};UseDevelopmentEmulator=true`, {
    retryOptions: { maxRetries: 0, timeoutInMs: 10_000 },
  });
  clients.push(client);
  return client;
}

/** What an attacker would send: an operator command for the pending event's session. */
function command(type: MessageType, sessionId: string, eventId: string, answers: string, from?: string): ServiceBusMessage {
  return {
    messageId: randomUUID(),
    sessionId,
    body: Buffer.from(encodeBody({}), 'utf8'),
    contentType: 'application/json',
    applicationProperties: toWireProperties({
      [Prop.To]: ERP,
      [Prop.MessageType]: type,
      [Prop.EventId]: eventId,
      [Prop.ParentMessageId]: answers,
      ...(from ? { [Prop.From]: from } : {}),
    }),
  };
}

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (isServiceBusError(err)) return err.code;
    throw err;
  }
  return 'sent';
}

/** The messages in the endpoint's main subscription for `sessionId`, in order, up to the one `until` picks. */
async function drainEndpointSession(sessionId: string, until: (m: { messageId?: unknown }) => boolean) {
  const receiver = await stack.serviceBus.client.acceptSession(ERP, ERP, sessionId);
  const got = [];
  try {
    for (;;) {
      const batch = await receiver.receiveMessages(10, { maxWaitTimeInMs: 15_000 });
      assert.ok(batch.length > 0, `the settlement reached ${ERP}/${ERP} in session ${sessionId}`);
      for (const m of batch) await receiver.completeMessage(m);
      got.push(...batch);
      if (batch.some(until)) return got;
    }
  } finally {
    await receiver.close();
  }
}

describe('an agent with the rights the model gives it cannot skip or resubmit', () => {
  test('its SkipRequest and ResubmissionRequest are refused by the broker; the HTTP settlement is what reaches the endpoint', async () => {
    const { sessionId, eventId, lastMessageId } = seeded.handoff;
    const attacks = [
      command(MessageType.SkipRequest, sessionId, eventId, lastMessageId),
      command(MessageType.ResubmissionRequest, sessionId, eventId, lastMessageId),
    ];
    // Straight onto the endpoint topic, forging the stamp the Manager subscription would give.
    const forged = [
      command(MessageType.SkipRequest, sessionId, eventId, lastMessageId, 'Manager'),
      command(MessageType.ResubmissionRequest, sessionId, eventId, lastMessageId, 'Manager'),
    ];

    // 1. No bus right at all (the model's agent): whatever key it makes up is refused, on Manager and on the topic.
    const nobody = busAs(`agent-${ERP}`, newKey());
    for (const m of attacks) assert.equal(await refusal(nobody.createSender(Topic.Manager).sendMessages(m)), 'UnauthorizedAccess');
    for (const m of forged) assert.equal(await refusal(nobody.createSender(ERP).sendMessages(m)), 'UnauthorizedAccess');

    // 2. A Listen-only policy given by mistake, on Manager and on the endpoint topic: still no send.
    const listenManager = busAs(`agent-listen-${Topic.Manager}`, keys.get(`agent-listen-${Topic.Manager}`)!);
    for (const m of attacks) assert.equal(await refusal(listenManager.createSender(Topic.Manager).sendMessages(m)), 'UnauthorizedAccess');
    const listenTopic = busAs(`agent-listen-${ERP}`, keys.get(`agent-listen-${ERP}`)!);
    for (const m of forged) assert.equal(await refusal(listenTopic.createSender(ERP).sendMessages(m)), 'UnauthorizedAccess');
    assert.equal(await refusal(listenTopic.createSender(ERP).scheduleMessages(forged[0]!, new Date(Date.now() + 1_000))), 'UnauthorizedAccess');

    // 3. Another endpoint's host (its model policy) cannot reach this endpoint or Manager either.
    const billingHost = busAs('host-billingendpoint', keys.get('host-billingendpoint')!);
    assert.equal(await refusal(billingHost.createSender(Topic.Manager).sendMessages(attacks[0]!)), 'UnauthorizedAccess');
    assert.equal(await refusal(billingHost.createSender(ERP).sendMessages(forged[0]!)), 'UnauthorizedAccess');

    // 4. The agent settles through the console instead: its service principal's token, no bus credential.
    const agent = new ConsoleHandoffClient({ consoleUrl: routes.url, token: () => idp.clientCredentialsToken() });
    const settled = await agent.complete({ endpointId: ERP, eventId, messageId: lastMessageId }, { importedLines: 3 });
    assert.equal(settled.outcome, 'sent');

    // The settlement is the positive signal: everything the attacks could have put in this session came before it.
    const received = await drainEndpointSession(sessionId, (m) => m.messageId === settled.messageId);
    assert.deepEqual(
      received.map((m) => [m.messageId, m.applicationProperties?.[Prop.MessageType], m.applicationProperties?.[Prop.From]]),
      [[settled.messageId, MessageType.HandoffCompletedRequest, 'Manager']],
    );
  });

  test('control: the same SkipRequest with the console identity (Send on Manager) does reach the endpoint, stamped From = Manager', async () => {
    // What the rights model keeps from agents: with the namespace key the command goes through.
    const sessionId = `control-${randomUUID()}`;
    const skip = command(MessageType.SkipRequest, sessionId, 'evt-control', 'msg-control');
    const consoleIdentity = busAs('RootManageSharedAccessKey', stack.emulator.key);
    await consoleIdentity.createSender(Topic.Manager).sendMessages(skip);
    const received = await drainEndpointSession(sessionId, (m) => m.messageId === skip.messageId);
    assert.equal(received[0]?.applicationProperties?.[Prop.MessageType], MessageType.SkipRequest);
    assert.equal(received[0]?.applicationProperties?.[Prop.From], 'Manager');
  });
});
