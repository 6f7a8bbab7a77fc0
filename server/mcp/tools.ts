// The MCP server's tools (docs/agents.md): one McpServer per caller and request, whose tools run the console's
// own server functions and authorize each call through the very path the HTTP routes use (authorize / the Agent
// API's agentCall with the caller's Request): the same roles, the same refusals (audited), the same audit
// of every change, the same rate limits. A refusal comes back as a tool error that says what the identity may not
// do; it is not an MCP protocol error, so an assistant can read it and tell its user.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ResolutionStatus } from '@nimbus/sdk/contract';
import { SDK_VERSION } from '@nimbus/sdk';
import { agentCall, agentInput, refuseInput } from '../agent/call.ts';
import { agentCatalog } from '../agent/catalog.ts';
import { receivePendingHandoff } from '../agent/handoffs.ts';
import { publishAsAgent } from '../agent/publish.ts';
import { settleBody } from '../agent/schemas.ts';
import { settleHandoff } from '../agent/settle.ts';
import { requireEndpoint, requireEventType } from '../api.ts';
import { actorOf, audited, authorize, readScope, refuseAuthorized, type Authorized, type AuthSubject } from '../auth/authorize.ts';
import { principalKey } from '../auth/principal.ts';
import { countCall } from '../agent/limits.ts';
import { inScope } from '../auth/readScope.ts';
import { agentEndpoints, type Action } from '../auth/roles.ts';
import { getContext } from '../context.ts';
import { failureGroups } from '../failures/groups.ts';
import { auditingFailure, badRequest, describeError, parseOr400 } from '../http.ts';
import { log } from '../log.ts';
import { endpointsWithCounts, eventDetails, listEndpointEvents, type EventListItem } from '../queries.ts';
import { editedResubmitCheck } from '../manager/editedResubmit.ts';
import { endpointIdParam, handoffResultSchema, idParam, payloadSchema, resubmitBody } from '../schemas.ts';
// The tools' ids are taken exactly as sent, as the Agent API's (server/exactIdFilters.ts): a tool's eventTypeId or
// sessionId is never trimmed into another id. Left out is no filter; empty and spaces alone are refused in words.
import { exactIdTarget } from '../exactIdFilterSchema.ts';

export const MCP_SERVER_NAME = 'nimbus-console';

const FAILURE_STATUSES = [ResolutionStatus.Failed, ResolutionStatus.DeadLettered, ResolutionStatus.Unsupported];

const ok = (value: unknown): CallToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value, null, 2) }] });

/**
 * A thrown error as a tool error whose text an assistant can relay: the status, error and detail a route would
 * answer (http.ts describeError) - a busy store is `busy (503)`, not an internal error - so the text says what the
 * audit entry of a failed change records. Unknown failures are logged with their message only and answered without
 * it, as errorResponse does.
 */
export function toolError(err: unknown): CallToolResult {
  const d = describeError(err);
  if (d.internal) {
    log.error({ err: err instanceof Error ? { name: err.name, message: err.message } : String(err) }, 'MCP tool call failed');
    return { content: [{ type: 'text', text: 'internal error: the console could not complete the call' }], isError: true };
  }
  const what = d.status === 401 || d.status === 403 ? 'refused' : d.status === 429 ? 'too many requests' : d.error;
  return { content: [{ type: 'text', text: `${what} (${d.status}): ${d.detail}` }], isError: true };
}

/** In every audit entry a tool call writes - successes, failures and refusals alike - so MCP changes can be told from the routes'. */
const MCP_AUDIT_DETAILS = Object.freeze({ via: 'mcp' });

/**
 * One tool call, its error answered as a tool error. It runs with an audit obligation of its own (http.ts
 * auditingFailure): a change authorized in it that fails before `audited` ran (an unknown endpoint, a payload off
 * its schema, a busy store) is audited with the status and reason the caller gets, as handle() does for a route -
 * handle() never sees the error, the call answers it - and in a batch no other call writes or clears it.
 */
async function run(fn: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    return ok(await auditingFailure(fn, MCP_AUDIT_DETAILS));
  } catch (err) {
    return toolError(err);
  }
}

type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

interface ToolConfig<Shape extends z.ZodRawShape> {
  title: string;
  description: string;
  inputSchema: Shape;
  annotations?: ToolAnnotations;
}

/**
 * What the SDK checks a tool's arguments against: any object, listed in tools/list with the JSON Schema of the tool's
 * own `schema` (zod copies a schema's metadata into its JSON Schema, so clients see what they saw before). Built
 * once per tool: an McpServer is made per request.
 */
const listedSchemas = new Map<string, z.ZodType>();
function acceptingAnyObject(name: string, schema: z.ZodObject): z.ZodType {
  let listed = listedSchemas.get(name);
  if (listed === undefined) {
    const { $schema: _draft, ...jsonSchema } = z.toJSONSchema(schema, { io: 'input', target: 'draft-7' });
    listed = z.looseObject({}).meta(jsonSchema);
    listedSchemas.set(name, listed);
  }
  return listed;
}

/**
 * Registers a tool whose arguments our handler validates, not the SDK. The SDK answers arguments that fail a tool's
 * input schema itself, before any handler runs: such a call was neither counted against the caller's limit nor
 * audited, so a loop of bad calls cost nothing and left no trace, while input refused by a handler (a
 * settle_handoff without its errorText) was both. Hooking the SDK's error path would lean on its private methods;
 * this uses its public API only. A bad argument is answered as a tool error (`bad request (400): invalid arguments
 * for <tool>: ...`), counted and audited under the tool's `action` (agent/call.ts refuseInput).
 */
function registerCheckedTool<Shape extends z.ZodRawShape>(
  server: McpServer,
  request: Request,
  name: string,
  action: Action,
  config: ToolConfig<Shape>,
  handler: (args: z.output<z.ZodObject<Shape>>, extra: ToolExtra) => Promise<CallToolResult>,
  /** A rule across the arguments (the route's body schema), checked with them: throws HttpError 400 when broken. */
  check?: (args: z.output<z.ZodObject<Shape>>) => void,
): void {
  const schema = z.object(config.inputSchema);
  server.registerTool(name, { ...config, inputSchema: acceptingAnyObject(name, schema) }, async (raw: unknown, extra: ToolExtra) => {
    let args: z.output<z.ZodObject<Shape>>;
    try {
      args = parseOr400(schema, raw, `arguments for ${name}`);
      check?.(args);
    } catch (err) {
      return run(() => refuseInput(request, action, err, { target: `mcp ${name}` }));
    }
    return handler(args, extra);
  });
}

/**
 * A reader tool's call (discover_topology for a Reader, search_failures, list_failure_groups, get_event): authorized
 * as the read route it stands for, then counted against the caller's call limit of the agent zone
 * (NIMBUS_AGENT_RATE_LIMIT_*, agent/limits.ts), 429 past it - the reads fan out into store queries, and a JSON-RPC
 * batch runs its calls at once.
 */
async function authorizeRead(request: Request, endpointId?: string, subject?: AuthSubject): Promise<Authorized> {
  const me = await authorize(request, 'read', endpointId, subject);
  const counted = countCall(principalKey(me.principal));
  if (!counted.ok) return refuseAuthorized(me, counted.detail, 429);
  return me;
}

/**
 * A payload argument: listed to clients as a JSON object, checked by the console's one payload rule (schemas.ts
 * payloadSchema: not null, no deeper than the SDK accepts), as POST /api/agent/publish and the resubmit route do.
 */
const mcpPayload = z.record(z.string(), z.unknown()).superRefine((value, check) => {
  const r = payloadSchema.safeParse(value);
  if (!r.success) for (const issue of r.error.issues) check.addIssue({ code: 'custom', message: issue.message, path: issue.path });
});

/** Whether the caller holds a role of the ladder somewhere (the console's reads), or only the Agent role. */
const readsAnything = (who: Authorized) => who.assignments.some((a) => a.role !== 'Agent');

/**
 * Refuses a reader tool (403) to a caller that holds only the Agent role, saying what it may use instead - through
 * refuseAuthorized like every other refusal: audited as a denied `read` (target `mcp <tool>`, and the endpoint and
 * event the call names) within the caller's refusal budget, not thrown past the audit.
 */
async function refuseAgentOnly(who: Authorized, tool: string, endpointId?: string, eventId?: string): Promise<never> {
  const scope = agentEndpoints(who.assignments);
  const where = scope.all ? 'every endpoint' : scope.endpointIds.join(', ');
  return refuseAuthorized(
    { ...who, action: 'read', endpointId, subject: { ...(eventId !== undefined ? { eventId } : {}), target: `mcp ${tool}` } },
    `${tool} needs a Reader, Operator or Owner role; ${who.user} holds only the Agent role (on ${where}), which allows discover_topology, receive_pending_handoff, settle_handoff and publish_event`,
  );
}

/** The MCP server for one caller: every tool is listed; each call is authorized as its route is, and refused (audited) when its roles do not allow it. */
export function createMcpServer(request: Request, who: Authorized): McpServer {
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version: SDK_VERSION },
    {
      instructions:
        'NimBus Console: see what is failing and why (list_failure_groups), find failed events (search_failures, get_event), work pending handoffs (receive_pending_handoff, settle_handoff), publish events (publish_event) and, with the Operator role, resubmit or skip failed events.',
    },
  );

  server.registerTool(
    'discover_topology',
    {
      title: 'Discover the topology',
      description:
        'The endpoints you may see (with their event counts when you hold a Reader role or above; countersUnreadable: true when an endpoint\'s counts cannot be read, so its zeros mean unknown) and the event types they produce and consume, with JSON schemas.',
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    () =>
      run(async () => {
        const ctx = await getContext();
        if (!readsAnything(who)) {
          return agentCall(request, 'agent.catalog', undefined, {}, async (x, me) => agentCatalog(x.catalog, me.assignments), (c) => ({ endpoints: c.endpoints.map((e) => e.id) }));
        }
        const me = await authorizeRead(request);
        const scope = readScope(me);
        // The counts only: the overview's activity, oldest failure and heartbeat (with its evidence query) are not
        // part of this tool's output, so they are not read.
        const endpoints = (await endpointsWithCounts(ctx.store, ctx.catalog)).filter((e) => inScope(scope, e.endpointId));
        const types = new Set(endpoints.flatMap((e) => [...e.produces, ...e.consumes]));
        return {
          // countersUnreadable only when true, as GET /api/endpoints: zero counts then mean "unknown", not "nothing failed".
          endpoints: endpoints.map((e) => ({
            id: e.endpointId,
            description: e.description,
            owner: e.owner,
            produces: e.produces,
            consumes: e.consumes,
            counts: e.counts,
            ...(e.countersUnreadable ? { countersUnreadable: true as const } : {}),
          })),
          eventTypes: ctx.catalog.eventTypes.filter((t) => types.has(t.id)).map((t) => ({ id: t.id, description: t.description ?? null, sessionKey: t.sessionKey ?? null, schema: t.schema ?? null })),
        };
      }),
  );

  registerCheckedTool(
    server,
    request,
    'search_failures',
    'read',
    {
      title: 'Search failed events',
      description:
        'Failed, dead-lettered and unsupported events, newest first, on one endpoint or on every endpoint you may read; optionally only those whose error text contains `text` (case-insensitive) or of one event type. Stored events that matched but could not be read are not in `events`: `unreadable` names them (endpoint, id, what is wrong).',
      inputSchema: {
        endpointId: endpointIdParam.optional().describe('Only this endpoint'),
        text: z.string().trim().min(1).max(200).optional().describe('A substring of the error text'),
        eventTypeId: exactIdTarget('eventTypeId').optional(),
        limit: z.number().int().min(1).max(100).default(20).describe('At most this many events (1-100, default 20)'),
      },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      run(async () => {
        if (!readsAnything(who)) return refuseAgentOnly(who, 'search_failures', args.endpointId);
        const ctx = await getContext();
        const me = await authorizeRead(request, args.endpointId);
        if (args.endpointId !== undefined) requireEndpoint(ctx, args.endpointId);
        requireEventType(ctx, args.eventTypeId);
        const scope = readScope(me);
        const endpointIds = args.endpointId !== undefined ? [args.endpointId] : ctx.catalog.endpoints.map((e) => e.id).filter((id) => inScope(scope, id));
        const pages = await Promise.all(
          endpointIds.map((id) =>
            listEndpointEvents(ctx.store, id, { status: FAILURE_STATUSES, q: args.text, eventTypeId: args.eventTypeId, pageSize: args.limit } as Parameters<typeof listEndpointEvents>[2]),
          ),
        );
        const items: EventListItem[] = pages.flatMap((p) => p.items).sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0));
        // Every matching row read that could not be read, named with its endpoint (ids are per endpoint): without
        // it an answer missing events would look whole. Not cut by `limit`: of such a row its id is known, not its time.
        const unreadable = pages.flatMap((p, i) => p.unreadable.map((u) => ({ endpointId: endpointIds[i]!, ...u })));
        return { searched: endpointIds, events: items.slice(0, args.limit), unreadable };
      }),
  );

  registerCheckedTool(
    server,
    request,
    'list_failure_groups',
    'read',
    {
      title: 'List failure groups',
      description:
        'Failed, dead-lettered and unsupported events grouped by cause (error type and normalised message), largest first, with counts per endpoint, an example event and any note operators left. Use search_failures or get_event to drill into one.',
      inputSchema: {
        endpointId: endpointIdParam.optional().describe('Only this endpoint'),
        since: z.string().datetime({ offset: true }).optional().describe('Only failures updated since this ISO-8601 instant'),
        limit: z.number().int().min(1).max(100).default(20).describe('At most this many groups (1-100, default 20)'),
      },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      run(async () => {
        if (!readsAnything(who)) return refuseAgentOnly(who, 'list_failure_groups', args.endpointId);
        const ctx = await getContext();
        const me = await authorizeRead(request, args.endpointId);
        if (args.endpointId !== undefined) requireEndpoint(ctx, args.endpointId);
        const view = await failureGroups(
          ctx.store,
          { endpointId: args.endpointId, status: [...FAILURE_STATUSES], since: args.since },
          readScope(me),
        );
        return {
          total: view.total,
          groups: view.groups.slice(0, args.limit).map(({ spark: _spark, ...g }) => g),
        };
      }),
  );

  registerCheckedTool(
    server,
    request,
    'get_event',
    'read',
    {
      title: 'Get an event',
      description: "One event on one endpoint: its status, payload, error, handoff, history of messages and audit trail.",
      inputSchema: { endpointId: endpointIdParam, eventId: idParam },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      run(async () => {
        if (!readsAnything(who)) return refuseAgentOnly(who, 'get_event', args.endpointId, args.eventId);
        const me = await authorizeRead(request, args.endpointId, { eventId: args.eventId });
        const ctx = await getContext();
        requireEndpoint(ctx, args.endpointId);
        return eventDetails(ctx.store, args.endpointId, args.eventId, readScope(me));
      }),
  );

  registerCheckedTool(
    server,
    request,
    'receive_pending_handoff',
    'agent.receive',
    {
      title: 'Receive a pending handoff',
      description:
        'The oldest pending handoff of an endpoint (optionally of one event type), waiting up to waitSeconds for one. Non-claiming: the same handoff is returned until it is settled; pass the event ids you already work on in `exclude`. Settle it with settle_handoff and the returned messageId.',
      inputSchema: {
        endpointId: endpointIdParam,
        eventTypeId: exactIdTarget('eventTypeId').optional(),
        waitSeconds: z.number().int().min(0).max(25).default(0),
        // The Agent API's rule for its exclude (server/agent/schemas.ts): an id of spaces alone names no event and is
        // refused in words, not taken as one that excludes nothing.
        exclude: z.array(exactIdTarget('eventId')).max(100, 'exclude names at most 100 event ids').optional(),
      },
    },
    (args, extra) =>
      run(async () => {
        const found = await agentCall(
          request,
          'agent.receive',
          args.endpointId,
          {},
          async (ctx) => {
            requireEndpoint(ctx, args.endpointId);
            requireEventType(ctx, args.eventTypeId);
            return receivePendingHandoff(ctx.store, { endpointId: args.endpointId, eventTypeId: args.eventTypeId, exclude: args.exclude }, args.waitSeconds, extra.signal);
          },
          (h) => ({ handedOut: h?.eventId ?? null, messageId: h?.messageId ?? null }),
        );
        return found ?? { pending: null, detail: `no pending handoff on ${args.endpointId}` };
      }),
  );

  registerCheckedTool(
    server,
    request,
    'settle_handoff',
    'agent.settle',
    {
      title: 'Settle a pending handoff',
      description:
        "Report the outcome of a pending handoff's external work: completed (the event completes) or failed (it fails with errorText and waits for an operator). Refused if the event is no longer that pending handoff, e.g. settled already.",
      inputSchema: {
        endpointId: endpointIdParam,
        eventId: idParam,
        messageId: idParam.describe('The messageId receive_pending_handoff returned'),
        outcome: z.enum(['completed', 'failed']),
        note: z.string().max(2000).optional().describe('For completed only'),
        errorText: z.string().trim().min(1).max(4000).optional().describe('Required when the outcome is failed'),
        errorType: z.string().trim().min(1).max(200).optional(),
        result: handoffResultSchema.describe("For completed: what the work produced (any JSON, no deeper than a payload); recorded as the event's content"),
      },
    },
    (args) =>
      run(async () => {
        // As POST /api/agent/settle: input refused after the checks that need none is audited and counted.
        const body = await agentInput(request, 'agent.settle', () => {
          const parsed = settleBody.safeParse(args);
          if (!parsed.success) throw badRequest(parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`).join('; '));
          return parsed.data;
        });
        return agentCall(
          request,
          'agent.settle',
          body.endpointId,
          { eventId: body.eventId, target: `handoff ${body.messageId}` },
          async (ctx, me) => {
            requireEndpoint(ctx, body.endpointId);
            return settleHandoff(ctx, body, me);
          },
          (x) => ({ settlement: body.outcome, messageId: x.messageId, outcome: x.outcome }),
        );
      }),
  );

  registerCheckedTool(
    server,
    request,
    'publish_event',
    'agent.publish',
    {
      title: 'Publish an event',
      description:
        "Publish an event as an endpoint you hold the Agent's rights on (name endpointId when you hold several). The payload is checked against the event type's JSON schema from discover_topology.",
      inputSchema: {
        eventTypeId: exactIdTarget('eventTypeId'),
        payload: mcpPayload.describe('The event payload (a JSON object)'),
        endpointId: endpointIdParam.optional(),
        sessionId: exactIdTarget('sessionId').optional(),
      },
    },
    (args) =>
      run(async () => {
        // As POST /api/agent/publish: a missing endpointId is audited and counted.
        const target = await agentInput(request, 'agent.publish', () => {
          if (args.endpointId !== undefined) return args.endpointId;
          const scope = agentEndpoints(who.assignments);
          if (scope.all || scope.endpointIds.length !== 1)
            throw badRequest(scope.all ? 'name endpointId: your role allows publishing as any endpoint' : `name endpointId: you may publish as ${scope.endpointIds.join(', ') || 'no endpoint'}`);
          return scope.endpointIds[0]!;
        });
        return agentCall(request, 'agent.publish', target, { target: `publish ${args.eventTypeId}` }, (ctx, caller) => publishAsAgent(ctx, target, args.eventTypeId, args.payload, args.sessionId, principalKey(caller.principal)), (p) => ({
          eventTypeId: p.eventTypeId,
          messageId: p.messageId,
          ...(p.replayed ? { replayed: true } : {}),
        }));
      }),
  );

  // Offered to every caller, as the routes are: a caller without the Operator role gets the refusal authorize()
  // gives (a 403 tool error that says why), audited as denied with the event's Denied entry. Registered only for
  // operators, a Reader's or an agent's call was the SDK's "tool not found": neither explained nor audited.
  registerCheckedTool(
    server,
    request,
    'resubmit_event',
    'resubmit',
    {
      title: 'Resubmit a failed event',
      description:
        'Send a failed, dead-lettered or unsupported event (or a pending handoff) to its endpoint again: its stored payload, or an edited `payload` (and `eventTypeId`). Needs the Operator role on the endpoint.',
      inputSchema: {
        endpointId: endpointIdParam,
        eventId: idParam,
        payload: mcpPayload.optional().describe('An edited payload; left out: the stored one'),
        eventTypeId: exactIdTarget('eventTypeId').optional(),
      },
      annotations: { destructiveHint: false, idempotentHint: true },
    },
    (args) =>
      run(async () => {
        const me = await authorize(request, 'resubmit', args.endpointId, { eventId: args.eventId });
        const ctx = await getContext();
        requireEndpoint(ctx, args.endpointId);
        requireEventType(ctx, args.eventTypeId);
        const edited = args.payload !== undefined ? { payload: args.payload, eventTypeId: args.eventTypeId } : undefined;
        // As the resubmit route: checked against the row the Manager resubmits (server/manager/editedResubmit.ts).
        const check = editedResubmitCheck(ctx.catalog, edited);
        const spec = edited ? { kind: 'resubmit' as const, edited } : { kind: 'resubmit' as const };
        return audited(me, () => ctx.manager.execute(args.endpointId, args.eventId, spec, actorOf(me), undefined, check.caller), (r) => ({ ...check.details(), messageId: r.messageId, outcome: r.outcome }));
      }),
    // The route's own rule (resubmitBody: "eventTypeId goes with an edited payload"): without it an eventTypeId with
    // no payload was dropped and the stored payload resubmitted under its stored type, answered as done.
    (args) => void parseOr400(resubmitBody, { payload: args.payload, eventTypeId: args.eventTypeId }, 'arguments for resubmit_event'),
  );

  registerCheckedTool(
    server,
    request,
    'skip_event',
    'skip',
    {
      title: 'Skip a failed event',
      description: 'Give up on a failed event: it is recorded Skipped and its session moves on. Needs the Operator role on the endpoint.',
      inputSchema: { endpointId: endpointIdParam, eventId: idParam },
      annotations: { destructiveHint: true },
    },
    (args) =>
      run(async () => {
        const me = await authorize(request, 'skip', args.endpointId, { eventId: args.eventId });
        const ctx = await getContext();
        requireEndpoint(ctx, args.endpointId);
        return audited(me, () => ctx.manager.execute(args.endpointId, args.eventId, { kind: 'skip' }, actorOf(me)), (r) => ({ messageId: r.messageId, outcome: r.outcome }));
      }),
  );
  return server;
}
