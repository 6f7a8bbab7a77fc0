// The MCP server through the SDK's own MCP client: over Streamable HTTP against the console's real /api/mcp route
// (behind a loopback server) and over stdio through `npm run mcp`'s bridge, on the embedded stack with a real
// OpenID provider's client-credentials token. The token's app role is mapped per test: Agent on the ERP endpoint
// plus Operator site-wide (every tool), or the Agent role alone (refusals).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FeedOptions, SqlQuerySpec } from '@azure/cosmos';
import { decodeBody, MessageType } from '@nimbus/sdk/contract';
import { CONTAINERS, COUNTER_DOC_ID } from '../../lib/store/index.ts';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { plantUnreadableRows } from '../../lib/store/testing/unreadableRows.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { seedConsoleData } from '../testing/seed.ts';
import { API_AUDIENCE, startTestOidcProvider, type TestOidcProvider } from '../testing/oidcProvider.ts';
import { oidcProviderEnv } from '../testing/oidcEnv.ts';
import { startRouteServer, type RouteServer } from '../testing/routeServer.ts';
import { queryAudit } from '../audit/auditLog.ts';
import { CONSOLE_DIR } from '../console.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const ERP = 'erpendpoint';
const OPERATOR_AND_AGENT = JSON.stringify({ roles: { 'Handoff.Settle': [`Agent:${ERP}`, 'Operator'] } });
const AGENT_ONLY = JSON.stringify({ roles: { 'Handoff.Settle': `Agent:${ERP}` } });
let stack: ConsoleTestStack;
let idp: TestOidcProvider;
let server: RouteServer;
let seeded: Awaited<ReturnType<typeof seedConsoleData>>;
let closeContext: () => Promise<void>;

before(async () => {
  stack = await startConsoleTestStack('mcp');
  idp = await startTestOidcProvider({ redirectUris: ['http://127.0.0.1:1/auth/callback'], postLogoutRedirectUris: [] });
  Object.assign(
    process.env,
    stack.env,
    oidcProviderEnv(idp, { sessionSecret: 'mcp-test-session-secret-0123456789abcdef', bearerAudience: API_AUDIENCE, roleMap: {} }),
  );
  process.env.NIMBUS_AUTH_ROLE_MAP = OPERATOR_AND_AGENT;
  seeded = await seedConsoleData(stack.store);
  server = await startRouteServer();
  ({ closeContext } = await import('../context.ts'));
});

after(async () => {
  await server?.close();
  await closeContext?.();
  await idp?.close();
  await stack?.close();
});

async function connect(): Promise<Client> {
  const client = new Client({ name: 'nimbus-mcp-test', version: '1.0.0' });
  const token = await idp.clientCredentialsToken();
  await client.connect(new StreamableHTTPClientTransport(new URL('/api/mcp', server.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;
async function ok<T>(client: Client, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const r = await client.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name} failed: ${text(r)}`);
  return JSON.parse(text(r)) as T;
}
async function refused(client: Client, name: string, args: Record<string, unknown>, pattern: RegExp): Promise<void> {
  const r = await client.callTool({ name, arguments: args });
  assert.equal(r.isError, true, `${name} should be refused: ${text(r)}`);
  assert.match(text(r), pattern);
}

const ALL_TOOLS = ['discover_topology', 'get_event', 'list_failure_groups', 'publish_event', 'receive_pending_handoff', 'resubmit_event', 'search_failures', 'settle_handoff', 'skip_event'];

describe('MCP server over Streamable HTTP, as an Operator that is also the ERP agent', () => {
  let client: Client;
  before(async () => {
    client = await connect();
  });
  after(async () => {
    await client?.close();
  });

  test('lists every tool, each with an input schema', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ALL_TOOLS);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', t.name);
      assert.ok(t.description && t.description.length > 20, t.name);
    }
    const settle = tools.find((t) => t.name === 'settle_handoff')!;
    assert.deepEqual([...(settle.inputSchema.required ?? [])].sort(), ['endpointId', 'eventId', 'messageId', 'outcome']);
    // The tools validate their arguments themselves (tools.ts registerCheckedTool): clients still see every bound.
    const search = tools.find((t) => t.name === 'search_failures')!;
    assert.deepEqual(Object.keys(search.inputSchema.properties ?? {}).sort(), ['endpointId', 'eventTypeId', 'limit', 'text']);
    assert.deepEqual(search.inputSchema.properties?.limit, { default: 20, type: 'integer', minimum: 1, maximum: 100, description: 'At most this many events (1-100, default 20)' });
  });

  test('discover_topology: the endpoints and event types with schemas', async () => {
    const topo = await ok<{ endpoints: Array<{ id: string; counts: unknown }>; eventTypes: Array<{ id: string; schema: unknown }> }>(client, 'discover_topology');
    assert.ok(topo.endpoints.some((e) => e.id === 'billingendpoint' && e.counts));
    assert.ok(topo.eventTypes.find((t) => t.id === 'OrderPlaced')?.schema);
  });

  test('discover_topology reads no heartbeat evidence: its output has no heartbeat', async () => {
    // An overdue probe: a read that computes heartbeats looks up the endpoint's last answer for it.
    await stack.store.recordHeartbeat({ endpointId: 'billingendpoint', probeId: randomUUID(), status: 'Pending', sentAt: new Date(Date.now() - 600_000).toISOString(), intervalSeconds: 300 });
    const { getContext } = await import('../context.ts');
    const { database } = (await getContext()).store;
    // Watches the console's own client (the one the tool reads through): which events queries it runs.
    const queries: string[] = [];
    const container = database.container.bind(database);
    database.container = (id: string) => {
      const c = container(id);
      if (id !== CONTAINERS.events) return c;
      // Item queries are all that reads of the events container use.
      const items = { query: (spec: SqlQuerySpec, options?: FeedOptions) => (queries.push(spec.query), c.items.query(spec, options)) };
      return { items } as unknown as typeof c;
    };
    try {
      const topo = await ok<{ endpoints: Array<Record<string, unknown>> }>(client, 'discover_topology');
      const billing = topo.endpoints.find((e) => e.id === 'billingendpoint');
      assert.ok(billing);
      assert.deepEqual(Object.keys(billing).sort(), ['consumes', 'counts', 'description', 'id', 'owner', 'produces']);
    } finally {
      delete (database as { container?: unknown }).container;
    }
    // Neither the evidence query nor the overview's oldest-failure query: the counts come from the counters.
    assert.deepEqual(queries, [], 'no query of the events was run');
  });

  test('discover_topology marks an endpoint whose counters document no longer parses, as the HTTP API does', async () => {
    // Planted past the store, which never writes such a document; its zero counts must not read as "nothing failed".
    const broken = 'crmendpoint';
    await stack.store.database.container(CONTAINERS.counters).items.upsert({ id: COUNTER_DOC_ID, endpointId: broken, counts: 'garbled' });
    try {
      const topo = await ok<{ endpoints: Array<Record<string, unknown>> }>(client, 'discover_topology');
      const crm = topo.endpoints.find((e) => e.id === broken);
      assert.equal(crm?.countersUnreadable, true, JSON.stringify(crm));
      const billing = topo.endpoints.find((e) => e.id === 'billingendpoint');
      assert.ok(billing);
      assert.equal('countersUnreadable' in billing, false, 'the mark is only there when true');
    } finally {
      await stack.store.recountEndpoint(broken);
    }
  });

  test('find a failed event (list_failure_groups, search_failures, get_event) and resubmit it', async () => {
    const grouped = await ok<{ total: number; groups: Array<{ groupId: string; title: string; count: number; endpoints: Array<{ endpointId: string }>; example: { eventId: string } | null }> }>(client, 'list_failure_groups', { endpointId: 'billingendpoint' });
    assert.ok(grouped.groups.length > 0 && grouped.total >= grouped.groups.length);
    assert.ok(
      grouped.groups.some((g) => /card declined/i.test(g.title) && g.endpoints.some((e) => e.endpointId === 'billingendpoint')),
      `the declined-card failure is a group: ${JSON.stringify(grouped.groups.map((g) => g.title))}`,
    );
    const found = await ok<{ events: Array<{ endpointId: string; eventId: string; status: string }> }>(client, 'search_failures', { text: 'card DECLINED' });
    assert.deepEqual(found.events.map((e) => [e.endpointId, e.eventId, e.status]), [['billingendpoint', seeded.failed.eventId, 'Failed']]);
    const all = await ok<{ events: Array<{ eventId: string }> }>(client, 'search_failures', { endpointId: 'billingendpoint' });
    assert.ok(all.events.some((e) => e.eventId === seeded.deadLettered.eventId), 'dead-lettered events are failures too');
    const details = await ok<{ event: { errorText: string; payload: unknown }; history: unknown[] }>(client, 'get_event', { endpointId: 'billingendpoint', eventId: seeded.failed.eventId });
    assert.match(details.event.errorText, /Card declined/);
    assert.ok(details.history.length > 0);
    const sent = await ok<{ outcome: string; messageType: string }>(client, 'resubmit_event', { endpointId: 'billingendpoint', eventId: seeded.failed.eventId });
    assert.deepEqual([sent.outcome, sent.messageType], ['sent', MessageType.ResubmissionRequest]);
    const audit = await queryAudit(stack.store.database, { user: idp.serviceClient.id, action: 'resubmit', pageSize: 5 });
    assert.equal(audit.items[0]?.outcome, 'succeeded');
    assert.equal((audit.items[0]?.details as { via?: string } | null)?.via, 'mcp');
    await refused(client, 'get_event', { endpointId: 'billingendpoint', eventId: 'no-such-event' }, /not found \(404\)/);
  });

  test('search_failures names the matching events it could not read, by endpoint, rather than leaving them out silently', async () => {
    // A failure of its own (the seeded one is resubmitted above), and a copy of it whose document no longer parses,
    // planted past the store: its status and error text still match the search, so the search reads it.
    const tag = randomUUID();
    const eventId = `mcp-readable-${tag}`;
    const request = msg(MessageType.EventRequest, { endpointId: 'billingendpoint', eventId, sessionId: `s-${tag}`, payload: {} });
    await stack.store.writeStatus(request);
    await stack.store.writeStatus(msg(MessageType.ErrorResponse, { endpointId: 'billingendpoint', eventId, sessionId: `s-${tag}`, parentMessageId: request.messageId, errorType: 'LedgerError', errorText: `ledger ${tag} closed` }));
    const bad = `mcp-unreadable-${tag}`;
    await plantUnreadableRows(stack.store.database, { endpointId: 'billingendpoint', eventId }, [bad], { retryCount: 'many' });
    try {
      type Found = { events: Array<{ eventId: string }>; unreadable: Array<{ endpointId: string; id: string; issues: string }> };
      for (const args of [{ endpointId: 'billingendpoint', text: `ledger ${tag}` }, { text: `ledger ${tag}` }]) {
        const found = await ok<Found>(client, 'search_failures', args);
        assert.deepEqual(found.events.map((e) => e.eventId), [eventId], JSON.stringify(args));
        assert.deepEqual(found.unreadable.map((u) => [u.endpointId, u.id]), [['billingendpoint', bad]], JSON.stringify(args));
        assert.match(found.unreadable[0]!.issues, /^retryCount: /, 'what is wrong: the field, not its value');
      }
      const none = await ok<Found>(client, 'search_failures', { endpointId: 'crmendpoint' });
      assert.deepEqual(none.unreadable, [], 'an answer with nothing unreadable says so with an empty list');
    } finally {
      await stack.store.database.container(CONTAINERS.events).item(bad, ['billingendpoint', bad]).delete();
    }
  });

  test('skip_event skips a dead-lettered event', async () => {
    const sent = await ok<{ outcome: string; messageType: string }>(client, 'skip_event', { endpointId: 'billingendpoint', eventId: seeded.deadLettered.eventId });
    assert.deepEqual([sent.outcome, sent.messageType], ['sent', MessageType.SkipRequest]);
  });

  test('receive_pending_handoff and settle_handoff; a second settlement is refused', async () => {
    const h = await ok<{ eventId: string; messageId: string }>(client, 'receive_pending_handoff', { endpointId: ERP });
    assert.equal(h.eventId, seeded.handoff.eventId);
    const settled = await ok<{ outcome: string }>(client, 'settle_handoff', { endpointId: ERP, eventId: h.eventId, messageId: h.messageId, outcome: 'completed', note: 'done by the assistant' });
    assert.equal(settled.outcome, 'sent');
    await refused(client, 'settle_handoff', { endpointId: ERP, eventId: h.eventId, messageId: h.messageId, outcome: 'completed' }, /conflict \(409\).*already settled/);
    await refused(client, 'settle_handoff', { endpointId: ERP, eventId: h.eventId, messageId: h.messageId, outcome: 'failed' }, /errorText is required/);
    const next = await ok<{ eventId: string }>(client, 'receive_pending_handoff', { endpointId: ERP });
    assert.equal(next.eventId, seeded.handoff2.eventId, 'the settled handoff is not handed out again');
  });

  test('publish_event validates against the schema', async () => {
    await refused(client, 'publish_event', { endpointId: 'storefrontendpoint', eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-M1' } }, /bad request \(400\): the payload does not match the OrderPlaced schema/);
    const order = { orderId: 'ORD-M2', customerId: 'C-9', lines: [], total: 1, currency: 'EUR' };
    const p = await ok<{ messageId: string; sessionId: string }>(client, 'publish_event', { endpointId: 'storefrontendpoint', eventTypeId: 'OrderPlaced', payload: order });
    assert.equal(p.sessionId, 'ORD-M2');
  });

  test('tool ids are taken as sent, as the Agent API takes them: a leading space is part of the id, spaces alone are refused', async () => {
    // The tools trimmed them: sessionId " ORD-M3" published into session "ORD-M3", and eventTypeId " OrderPlaced"
    // searched OrderPlaced's failures.
    const order = { orderId: 'ORD-M3', customerId: 'C-9', lines: [], total: 1, currency: 'EUR' };
    const p = await ok<{ sessionId: string }>(client, 'publish_event', { endpointId: 'storefrontendpoint', eventTypeId: 'OrderPlaced', payload: order, sessionId: ' ORD-M3' });
    assert.equal(p.sessionId, ' ORD-M3', 'published into the session named');
    await refused(client, 'publish_event', { endpointId: 'storefrontendpoint', eventTypeId: 'OrderPlaced', payload: order, sessionId: '  ' }, /sessionId.*a session id of spaces alone names nothing/);
    await refused(client, 'search_failures', { eventTypeId: ' OrderPlaced' }, /event type " OrderPlaced" is not in the catalog/);
    await refused(client, 'search_failures', { eventTypeId: ' ' }, /eventTypeId.*an event type id of spaces alone names nothing/);
    // receive_pending_handoff's exclude as the Agent API's: it took an id of spaces alone as one that excluded nothing.
    await refused(client, 'receive_pending_handoff', { endpointId: ERP, exclude: ['evt-x', '  '] }, /exclude\.1.*an event id of spaces alone names nothing/);
  });
});

describe('MCP server for an identity with the Agent role only', () => {
  let client: Client;
  before(async () => {
    process.env.NIMBUS_AUTH_ROLE_MAP = AGENT_ONLY;
    client = await connect();
  });
  after(async () => {
    await client?.close();
    process.env.NIMBUS_AUTH_ROLE_MAP = OPERATOR_AND_AGENT;
  });

  test('resubmit_event and skip_event are offered, and calling them is refused with the reason', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ALL_TOOLS);
    await refused(client, 'resubmit_event', { endpointId: ERP, eventId: seeded.handoff2.eventId }, /^refused \(403\): .*resubmit/);
  });

  test('the reads refuse with what the identity may do instead', async () => {
    await refused(client, 'search_failures', {}, /search_failures needs a Reader, Operator or Owner role; .* holds only the Agent role \(on erpendpoint\)/);
    await refused(client, 'list_failure_groups', {}, /list_failure_groups needs a Reader, Operator or Owner role/);
    await refused(client, 'get_event', { endpointId: ERP, eventId: seeded.handoff2.eventId }, /holds only the Agent role/);
  });

  test('the agent tools work on its endpoint and are refused elsewhere', async () => {
    const topo = await ok<{ endpoints: Array<{ id: string }> }>(client, 'discover_topology');
    assert.deepEqual(topo.endpoints.map((e) => e.id), [ERP]);
    const h = await ok<{ eventId: string }>(client, 'receive_pending_handoff', { endpointId: ERP });
    assert.equal(h.eventId, seeded.handoff2.eventId);
    await refused(client, 'receive_pending_handoff', { endpointId: 'billingendpoint' }, /refused \(403\): agent\.receive needs the Agent role \(or Operator\) on endpoint billingendpoint/);
    await refused(client, 'publish_event', { eventTypeId: 'OrderPlaced', payload: {} }, /does not produce OrderPlaced/);
  });
});

describe('npm run mcp: the stdio bridge', () => {
  test('lists the console tools and runs them', async () => {
    const client = new Client({ name: 'nimbus-mcp-stdio-test', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', join(CONSOLE_DIR, 'scripts', 'mcp.ts')],
      cwd: CONSOLE_DIR,
      env: { PATH: process.env.PATH ?? '', NIMBUS_MCP_CONSOLE_URL: server.url, NIMBUS_MCP_TOKEN: await idp.clientCredentialsToken() },
      stderr: 'pipe',
    });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), ALL_TOOLS);
      // The failures seeded were resubmitted and skipped above: look the event up by id.
      const details = await ok<{ event: { eventId: string; status: string } }>(client, 'get_event', { endpointId: 'billingendpoint', eventId: seeded.failed.eventId });
      assert.equal(details.event.eventId, seeded.failed.eventId);
      await refused(client, 'get_event', { endpointId: 'billingendpoint', eventId: 'no-such-event' }, /not found \(404\)/);
    } finally {
      await client.close();
    }
  });
});

describe('MCP reads are bounded', () => {
  // The reader tools (search_failures, list_failure_groups, get_event) ran outside every limit, and one POST could
  // carry a JSON-RPC batch of 100 of them. A signed-in person (session cookie) here: a bucket no other test uses.
  const SESSION_SECRET = 'mcp-test-session-secret-0123456789abcdef';
  const reader: Principal = { kind: 'user', id: 'oid-mcp-reads', name: 'mcp-reads@test', roles: ['Handoff.Settle'], groups: [] };
  const postMcp = async (body: unknown) => {
    const { POST } = await import('../../app/api/mcp/route.ts');
    return POST(
      new Request('http://127.0.0.1:3000/api/mcp', {
        method: 'POST',
        headers: {
          host: '127.0.0.1:3000',
          cookie: `${SESSION_COOKIE}=${sealSession(reader, { secret: SESSION_SECRET, maxAgeSeconds: 600 })}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify(body),
      }),
    );
  };
  const toolCall = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

  test("each reader tool call counts against the caller's call limit, in a batch too", async () => {
    const saved = { burst: process.env.NIMBUS_AGENT_RATE_LIMIT_BURST, rate: process.env.NIMBUS_AGENT_RATE_LIMIT_PER_MINUTE };
    // Three calls at once, one a minute: nothing refills during the test however slow the machine.
    process.env.NIMBUS_AGENT_RATE_LIMIT_BURST = '3';
    process.env.NIMBUS_AGENT_RATE_LIMIT_PER_MINUTE = '1';
    try {
      const event = { endpointId: 'billingendpoint', eventId: seeded.failed.eventId };
      const answer = await postMcp([toolCall(1, 'get_event', event), toolCall(2, 'search_failures', {}), toolCall(3, 'list_failure_groups', {}), toolCall(4, 'get_event', event)]);
      assert.equal(answer.status, 200, await answer.clone().text());
      const results = ((await answer.json()) as Array<{ id: number; result: CallToolResult }>).map((r) => r.result);
      assert.equal(results.length, 4);
      const limited = results.filter((r) => r.isError === true);
      assert.equal(limited.length, 1, `one of the four over the limit: ${JSON.stringify(results.map((r) => text(r).slice(0, 80)))}`);
      assert.match(text(limited[0]), /too many requests \(429\)/);
    } finally {
      for (const [k, v] of [['NIMBUS_AGENT_RATE_LIMIT_BURST', saved.burst], ['NIMBUS_AGENT_RATE_LIMIT_PER_MINUTE', saved.rate]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  test('a JSON-RPC batch carries at most 20 messages', async () => {
    const pings = (n: number) => Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'ping' }));
    assert.equal((await postMcp(pings(20))).status, 200);
    const refused = await postMcp(pings(21));
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), /at most 20/);
  });
});

describe('MCP tool arguments that do not validate', () => {
  // The SDK validated each tool's arguments against its schema and answered a bad one before our handler ran: the
  // call neither counted against the caller's limit nor left an audit entry, though input a handler refused did both.
  const SESSION_SECRET = 'mcp-test-session-secret-0123456789abcdef';
  const caller: Principal = { kind: 'user', id: 'oid-mcp-bad-args', name: 'mcp-bad-args@test', roles: ['Handoff.Settle'], groups: [] };
  const call = async (id: number, name: string, args: Record<string, unknown>): Promise<CallToolResult> => {
    const { POST } = await import('../../app/api/mcp/route.ts');
    const answer = await POST(
      new Request('http://127.0.0.1:3000/api/mcp', {
        method: 'POST',
        headers: {
          host: '127.0.0.1:3000',
          cookie: `${SESSION_COOKIE}=${sealSession(caller, { secret: SESSION_SECRET, maxAgeSeconds: 600 })}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
      }),
    );
    assert.equal(answer.status, 200, await answer.clone().text());
    return ((await answer.json()) as { result: CallToolResult }).result;
  };

  test('are answered as a tool error, audited as refused and counted against the call limit', async () => {
    const saved = { burst: process.env.NIMBUS_AGENT_RATE_LIMIT_BURST, rate: process.env.NIMBUS_AGENT_RATE_LIMIT_PER_MINUTE };
    // Two calls at once, one a minute: nothing refills during the test however slow the machine.
    process.env.NIMBUS_AGENT_RATE_LIMIT_BURST = '2';
    process.env.NIMBUS_AGENT_RATE_LIMIT_PER_MINUTE = '1';
    try {
      const tooMany = await call(1, 'search_failures', { limit: 0 });
      assert.equal(tooMany.isError, true, text(tooMany));
      assert.match(text(tooMany), /search_failures.*limit/);
      const noEvent = await call(2, 'skip_event', { endpointId: 'billingendpoint' });
      assert.equal(noEvent.isError, true, text(noEvent));
      assert.match(text(noEvent), /skip_event.*eventId/);
      const entries = (await queryAudit(stack.store.database, { user: caller.id, pageSize: 10 })).items;
      assert.deepEqual(
        entries.map((e) => [e.action, e.outcome, e.status, e.target]).sort(),
        [
          ['read', 'failed', 400, 'mcp search_failures'],
          ['skip', 'failed', 400, 'mcp skip_event'],
        ],
      );
      assert.match(entries.find((e) => e.action === 'skip')!.reason ?? '', /^bad request: invalid arguments for skip_event: eventId/);
      assert.deepEqual(entries.map((e) => e.details), [{ via: 'mcp' }, { via: 'mcp' }]);
      // The two bad calls spent the budget: a good one is now over the limit.
      const limited = await call(3, 'search_failures', {});
      assert.equal(limited.isError, true, text(limited));
      assert.match(text(limited), /too many requests \(429\)/);
    } finally {
      for (const [k, v] of [['NIMBUS_AGENT_RATE_LIMIT_BURST', saved.burst], ['NIMBUS_AGENT_RATE_LIMIT_PER_MINUTE', saved.rate]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});

/** POSTs one JSON-RPC message or batch to the real /api/mcp route as a signed-in person (session cookie). */
async function postMcpAs(principal: Principal, body: unknown): Promise<Response> {
  const { POST } = await import('../../app/api/mcp/route.ts');
  return POST(
    new Request('http://127.0.0.1:3000/api/mcp', {
      method: 'POST',
      headers: {
        host: '127.0.0.1:3000',
        cookie: `${SESSION_COOKIE}=${sealSession(principal, { secret: 'mcp-test-session-secret-0123456789abcdef', maxAgeSeconds: 600 })}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(body),
    }),
  );
}
const toolCallMessage = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
type Answered = { id: number; result: CallToolResult };
/** The results of a batch of tool calls, by id. */
async function batchResults(principal: Principal, calls: ReturnType<typeof toolCallMessage>[]): Promise<Map<number, CallToolResult>> {
  const answer = await postMcpAs(principal, calls);
  assert.equal(answer.status, 200, await answer.clone().text());
  return new Map(((await answer.json()) as Answered[]).map((r) => [r.id, r.result]));
}
/** The result of one tool call sent alone (not in a batch). */
async function callResult(principal: Principal, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const answer = await postMcpAs(principal, toolCallMessage(1, name, args));
  assert.equal(answer.status, 200, await answer.clone().text());
  return ((await answer.json()) as Answered).result;
}
const auditOf = async (principal: Principal) => (await queryAudit(stack.store.database, { user: principal.id, pageSize: 20 })).items;

describe('MCP changes that fail after they were authorized', () => {
  // resubmit_event and skip_event answered a failure after authorization (an unknown endpoint, a payload off its
  // schema) as a tool error: handle()'s audit-on-failure never saw it, so the change was not audited at all.
  const BAD_ORDER = { orderId: 7 };

  test('are audited with the status and reason the caller got', async () => {
    const caller: Principal = { kind: 'user', id: 'oid-mcp-failed-changes', name: 'mcp-failed-changes@test', roles: ['Handoff.Settle'], groups: [] };
    const skipped = await callResult(caller, 'skip_event', { endpointId: 'nosuchendpoint', eventId: 'evt-nowhere' });
    assert.match(text(skipped), /^not found \(404\): .*nosuchendpoint/);
    const edited = await callResult(caller, 'resubmit_event', { endpointId: 'billingendpoint', eventId: seeded.completed.eventId, eventTypeId: 'OrderPlaced', payload: BAD_ORDER });
    assert.match(text(edited), /^bad request \(400\): the payload does not match the catalog.s JSON schema of OrderPlaced/);
    const entries = await auditOf(caller);
    assert.deepEqual(
      entries.map((e) => [e.action, e.outcome, e.status, e.endpointId, e.eventId]).sort(),
      [
        ['resubmit', 'failed', 400, 'billingendpoint', seeded.completed.eventId],
        ['skip', 'failed', 404, 'nosuchendpoint', 'evt-nowhere'],
      ],
    );
    assert.match(entries.find((e) => e.action === 'skip')!.reason ?? '', /^not found: .*nosuchendpoint/);
    assert.match(entries.find((e) => e.action === 'resubmit')!.reason ?? '', /^bad request: the payload does not match the catalog.s JSON schema of OrderPlaced/);
    // Written for the failure, not by audited(): they still say they came through MCP, as a success's entry does.
    assert.deepEqual(entries.map((e) => [e.action, e.details]).sort(), [['resubmit', { via: 'mcp' }], ['skip', { via: 'mcp' }]]);
  });

  test('in a batch, each call is audited as itself', async () => {
    // The calls of a batch run at once in one request: an obligation kept in the request's state was overwritten by
    // the next call's authorization, written for another call's failure, or cleared by another call's audited().
    const caller: Principal = { kind: 'user', id: 'oid-mcp-batch-changes', name: 'mcp-batch-changes@test', roles: ['Handoff.Settle'], groups: [] };
    const results = await batchResults(caller, [
      // Fails after a store read: last of the three.
      toolCallMessage(1, 'resubmit_event', { endpointId: 'billingendpoint', eventId: seeded.failed.eventId, eventTypeId: 'OrderPlaced', payload: BAD_ORDER }),
      // Fails right after its authorization.
      toolCallMessage(2, 'skip_event', { endpointId: 'nosuchendpoint', eventId: 'evt-batch-nowhere' }),
      // Refused by the Manager, inside audited(): writes its own entry.
      toolCallMessage(3, 'skip_event', { endpointId: 'billingendpoint', eventId: seeded.completed.eventId }),
    ]);
    assert.match(text(results.get(1)), /^bad request \(400\)/);
    assert.match(text(results.get(2)), /^not found \(404\)/);
    assert.match(text(results.get(3)), /^conflict \(409\)/);
    const entries = await auditOf(caller);
    assert.deepEqual(
      entries.map((e) => [e.action, e.outcome, e.status, e.endpointId, e.eventId]).sort(),
      [
        ['resubmit', 'failed', 400, 'billingendpoint', seeded.failed.eventId],
        ['skip', 'failed', 404, 'nosuchendpoint', 'evt-batch-nowhere'],
        ['skip', 'failed', 409, 'billingendpoint', seeded.completed.eventId],
      ],
    );
    // Owed by authorize() (the 400 and the 404) or written by audited() (the 409): each says it came through MCP.
    assert.deepEqual(entries.map((e) => (e.details as { via?: unknown } | null)?.via), ['mcp', 'mcp', 'mcp']);
  });
});

describe('MCP reads refused to an identity with the Agent role only', () => {
  // search_failures, list_failure_groups and get_event threw their "Agent role only" 403 past the audit: unlike every
  // other refusal, it left no entry (and took nothing from the refusal budget).
  before(() => {
    process.env.NIMBUS_AUTH_ROLE_MAP = AGENT_ONLY;
  });
  after(() => {
    process.env.NIMBUS_AUTH_ROLE_MAP = OPERATOR_AND_AGENT;
  });

  test('are audited as denied reads, naming the tool', async () => {
    const agent: Principal = { kind: 'user', id: 'oid-mcp-agent-reads', name: 'mcp-agent-reads@test', roles: ['Handoff.Settle'], groups: [] };
    const results = await batchResults(agent, [
      toolCallMessage(1, 'search_failures', {}),
      toolCallMessage(2, 'list_failure_groups', { endpointId: ERP }),
      toolCallMessage(3, 'get_event', { endpointId: ERP, eventId: seeded.handoff2.eventId }),
    ]);
    for (const [id, tool] of [[1, 'search_failures'], [2, 'list_failure_groups'], [3, 'get_event']] as const) {
      assert.equal(results.get(id)?.isError, true, tool);
      assert.match(text(results.get(id)), new RegExp(`^refused \\(403\\): ${tool} needs a Reader, Operator or Owner role; .* holds only the Agent role \\(on ${ERP}\\)`));
    }
    const entries = await auditOf(agent);
    assert.deepEqual(
      entries.map((e) => [e.target, e.action, e.outcome, e.status, e.endpointId, e.eventId]).sort(),
      [
        ['mcp get_event', 'read', 'denied', 403, ERP, seeded.handoff2.eventId],
        ['mcp list_failure_groups', 'read', 'denied', 403, ERP, null],
        ['mcp search_failures', 'read', 'denied', 403, null, null],
      ],
    );
    assert.match(entries[0]!.reason ?? '', /needs a Reader, Operator or Owner role/);
    assert.deepEqual(entries.map((e) => e.details), [{ via: 'mcp' }, { via: 'mcp' }, { via: 'mcp' }]);
  });
});

/** `levels` objects nested in each other: `{ a: { a: ... } }`. */
function nested(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: true };
  for (let i = 1; i < levels; i++) v = { a: v };
  return v;
}

describe('MCP payloads nested deeper than the SDK accepts', () => {
  // publish_event and resubmit_event took any JSON object: a payload the HTTP routes refuse (400) went out over MCP,
  // and every consumer dead-lettered it. The tools now use the routes' one payload rule.
  const caller: Principal = { kind: 'user', id: 'oid-mcp-deep-payloads', name: 'mcp-deep-payloads@test', roles: ['Handoff.Settle'], groups: [] };

  test('are refused with 400 by publish_event and resubmit_event, audited, and nothing is sent', async () => {
    const deep = nested(40);
    const results = await batchResults(caller, [
      toolCallMessage(1, 'publish_event', { endpointId: 'storefrontendpoint', eventTypeId: 'OrderPlaced', payload: deep }),
      toolCallMessage(2, 'resubmit_event', { endpointId: 'billingendpoint', eventId: seeded.failed.eventId, payload: deep }),
    ]);
    assert.match(text(results.get(1)), /^bad request \(400\): invalid arguments for publish_event: payload.*nests deeper than 32 levels/);
    assert.match(text(results.get(2)), /^bad request \(400\): invalid arguments for resubmit_event: payload.*nests deeper than 32 levels/);
    const entries = await auditOf(caller);
    assert.deepEqual(entries.map((e) => [e.action, e.outcome, e.status]).sort(), [['agent.publish', 'failed', 400], ['resubmit', 'failed', 400]]);
    // As deep as allowed is still accepted (the edited resubmission goes on to the catalog's schema check).
    const edge = await callResult(caller, 'resubmit_event', { endpointId: 'billingendpoint', eventId: seeded.failed.eventId, payload: nested(32) });
    assert.doesNotMatch(text(edge), /nests deeper/);
  });
});

describe('resubmit_event with an eventTypeId and no payload', () => {
  // The HTTP route refuses it (400, "eventTypeId goes with an edited payload"); the tool dropped the eventTypeId and
  // resubmitted the stored payload under the stored type, answered as done.
  const caller: Principal = { kind: 'user', id: 'oid-mcp-type-alone', name: 'mcp-type-alone@test', roles: ['Handoff.Settle'], groups: [] };

  test('is refused with 400 as the route refuses it, audited, and nothing is sent', async () => {
    const eventId = seeded.failed.eventId;
    const before = (await stack.store.getEvent('billingendpoint', eventId, 5))?.rows.map((r) => r.lastMessageId);
    const result = await callResult(caller, 'resubmit_event', { endpointId: 'billingendpoint', eventId, eventTypeId: 'OrderCancelled' });
    assert.match(text(result), /^bad request \(400\): invalid arguments for resubmit_event: eventTypeId: eventTypeId goes with an edited payload/);
    assert.deepEqual((await auditOf(caller)).map((e) => [e.action, e.outcome, e.status]), [['resubmit', 'failed', 400]]);
    assert.deepEqual((await stack.store.getEvent('billingendpoint', eventId, 5))?.rows.map((r) => r.lastMessageId), before, 'the event is as it was');
  });
});

describe('resubmit_event and skip_event called by a Reader', () => {
  // They were registered for operators only: a Reader's call was the MCP SDK's "tool not found", neither a refusal
  // that says why nor audited as denied, while the HTTP routes answer 403 and audit it (docs/security.md).
  const READER_MAP = JSON.stringify({ roles: { 'Handoff.Settle': [`Agent:${ERP}`, 'Operator'], 'Console.Read': 'Reader' } });
  const reader: Principal = { kind: 'user', id: 'oid-mcp-reader-changes', name: 'mcp-reader-changes@test', roles: ['Console.Read'], groups: [] };
  before(() => {
    process.env.NIMBUS_AUTH_ROLE_MAP = READER_MAP;
  });
  after(() => {
    process.env.NIMBUS_AUTH_ROLE_MAP = OPERATOR_AND_AGENT;
  });

  test('are refused with 403 and the reason, audited as denied, with a Denied entry in the event trail', async () => {
    const eventId = seeded.failed.eventId;
    const results = await batchResults(reader, [
      toolCallMessage(1, 'resubmit_event', { endpointId: 'billingendpoint', eventId }),
      toolCallMessage(2, 'skip_event', { endpointId: 'billingendpoint', eventId }),
    ]);
    assert.match(text(results.get(1)), /^refused \(403\): .*resubmit/);
    assert.match(text(results.get(2)), /^refused \(403\): .*skip/);
    const entries = await auditOf(reader);
    assert.deepEqual(
      entries.map((e) => [e.action, e.outcome, e.status, e.endpointId, e.eventId]).sort(),
      [
        ['resubmit', 'denied', 403, 'billingendpoint', eventId],
        ['skip', 'denied', 403, 'billingendpoint', eventId],
      ],
    );
    const trail = (await stack.store.listAudits(eventId, { pageSize: 50 })).items.filter((a) => a.type === 'Denied' && a.auditor === reader.name);
    assert.deepEqual(trail.map((a) => a.comment?.split(' ')[0]).sort(), ['resubmit', 'skip']);
  });
});

describe('settle_handoff with a result', () => {
  // The HTTP settle route takes `result`; the tool's input schema had none, so the SDK-side parse dropped it and the
  // handoff completed without what the work produced.
  const caller: Principal = { kind: 'user', id: 'oid-mcp-settle-result', name: 'mcp-settle-result@test', roles: ['Handoff.Settle'], groups: [] };

  test('is checked as the route checks it and sent as the event content', async () => {
    const extra = await seedConsoleData(stack.store, Date.now() - 60_000, '-mcpresult');
    const h = extra.handoff;
    const base = { endpointId: ERP, eventId: h.eventId, messageId: h.lastMessageId, outcome: 'completed' };
    const tooDeep = await callResult(caller, 'settle_handoff', { ...base, result: nested(40) });
    assert.match(text(tooDeep), /^bad request \(400\): .*result.*nests deeper than 32 levels/);
    // A note goes with a completion only: on a failure it was answered as settled and dropped.
    const noted = await callResult(caller, 'settle_handoff', { ...base, outcome: 'failed', errorText: 'ledger closed', note: 'will retry' });
    assert.equal(noted.isError, true, text(noted));
    assert.match(text(noted), /^bad request \(400\): note: note belongs to a completed outcome/);
    const result = { ledgerEntry: 'LE-1', invoiceId: 'INV-1' };
    const settled = await callResult(caller, 'settle_handoff', { ...base, result });
    assert.ok(!settled.isError, text(settled));
    const receiver = await stack.serviceBus.client.acceptSession(ERP, ERP, h.sessionId);
    try {
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 30_000 });
      assert.ok(m, 'the settlement reached the endpoint');
      await receiver.completeMessage(m);
      const content = decodeBody(m.body);
      assert.ok(content.ok);
      assert.deepEqual(JSON.parse(content.content.EventContent!.EventJson!), result);
    } finally {
      await receiver.close();
    }
  });
});
