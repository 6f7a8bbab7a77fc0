// One Agent API call: authorized like every console request (auth/authorize.ts: principal, role on the endpoint,
// refusals audited), then held to the agent's own limits (limits.ts, 429 audited), then run and audited however it
// ends - every Agent API call leaves an entry in the audit log, reads included, with the agent as actor. So every
// call, the GETs (receive, catalog) included, is authorized with `effects`: from our own origin or with a bearer
// token, never by a page on another site riding the user's cookie.
import { auditRefusedInput, audited, authorize, authorizeBeforeBody, refuseAuthorized, type Authorized, type AuthSubject } from '../auth/authorize.ts';
import { principalKey } from '../auth/principal.ts';
import type { Action } from '../auth/roles.ts';
import { admit, countCall } from './limits.ts';
import { getContext, type ConsoleContext } from '../context.ts';

export type AgentAction = Extract<Action, `agent.${string}`>;

/** Authorizes an Agent API call on an endpoint (or, for the catalog, anywhere) and admits it under the agent's limits. */
async function admitAgentCall(
  request: Request,
  action: AgentAction,
  endpointId: string | undefined,
  subject: AuthSubject,
): Promise<{ who: Authorized; release: () => void }> {
  const who = await authorize(request, action, endpointId, subject, { effects: true });
  const admission = admit(principalKey(who.principal));
  if (!admission.ok) return refuseAuthorized(who, admission.detail, 429);
  return { who, release: admission.release };
}

/**
 * Reads what an Agent API call names (its body or query, the endpoint it acts on) after the refusals that need
 * none of it: no valid token (401) or no Agent rights anywhere (403) is refused before anything is read or
 * validated, so a stranger learns no schema from a 400. Input refused after that is a call like any other: it
 * counts against the agent's call limit (429 past it) and is audited with the 400 it got, within the caller's
 * refusal budget (auth/authorize.ts auditRefusedInput).
 */
export async function agentInput<T>(request: Request, action: AgentAction, read: () => T | Promise<T>): Promise<T> {
  const who = await authorizeBeforeBody(request, action, undefined, {}, action, { effects: true });
  try {
    return await read();
  } catch (err) {
    return countAndAuditRefusedInput(who, err);
  }
}

/**
 * A call whose input was refused before the caller was authorized for anything (an MCP tool's arguments: the
 * transport has read them already, and their schema is public in tools/list): the refusals that need no input
 * first (401/403, audited under `action`), then counted and audited like agentInput's - whatever the tool stands
 * for, reads and changes included: a loop of bad calls costs the caller its call limit, not the console. Rethrows
 * `err` (or the 429).
 */
export async function refuseInput(request: Request, action: Action, err: unknown, subject: AuthSubject = {}): Promise<never> {
  return countAndAuditRefusedInput(await authorizeBeforeBody(request, action, undefined, subject, action, { effects: true }), err);
}

/** One call from the caller's budget of the agent zone (429 past it), and an audit entry within its refusal budget. */
async function countAndAuditRefusedInput(who: Authorized, err: unknown): Promise<never> {
  const counted = countCall(principalKey(who.principal));
  if (!counted.ok) return refuseAuthorized(who, counted.detail, 429);
  await auditRefusedInput(who, err);
  throw err;
}

/**
 * One Agent API call: authorized and admitted under the agent's limits, then `run` (with the console's context)
 * audited however it ends. The concurrency slot is freed whatever happens after admission - the context failing
 * to open included: a slot held by a call that ended would lock the agent out (429) for good.
 */
export async function agentCall<T>(
  request: Request,
  action: AgentAction,
  endpointId: string | undefined,
  subject: AuthSubject,
  run: (ctx: ConsoleContext, who: Authorized) => Promise<T>,
  details: (result: T) => Record<string, unknown>,
  okStatus = 200,
): Promise<T> {
  const admitted = await admitAgentCall(request, action, endpointId, subject);
  try {
    return await audited(admitted.who, async () => run(await getContext(), admitted.who), details, okStatus);
  } finally {
    admitted.release();
  }
}
