// One Agent API call: authorized like every console request (auth/authorize.ts: principal, role on the endpoint,
// refusals audited), then held to the agent's own limits (limits.ts, 429 audited), then run and audited however it
// ends - every Agent API call leaves an entry in the audit log, reads included, with the agent as actor.
import { audited, authorize, authorizeBeforeBody, refuseAuthorized, type Authorized, type AuthSubject } from '../auth/authorize.ts';
import type { Action } from '../auth/roles.ts';
import { admit } from './limits.ts';
import { getContext, type ConsoleContext } from '../context.ts';

export type AgentAction = Extract<Action, `agent.${string}`>;

/** Authorizes an Agent API call on an endpoint (or, for the catalog, anywhere) and admits it under the agent's limits. */
async function admitAgentCall(
  request: Request,
  action: AgentAction,
  endpointId: string | undefined,
  subject: AuthSubject,
): Promise<{ who: Authorized; release: () => void }> {
  const who = await authorize(request, action, endpointId, subject);
  const admission = admit(`${who.principal.kind}:${who.principal.id}`);
  if (!admission.ok) return refuseAuthorized(who, admission.detail, 429);
  return { who, release: admission.release };
}

/** The refusals that need no body or query (no principal, no Agent rights anywhere), before what names the endpoint is read. */
export const checkAgentBeforeBody = (request: Request, action: AgentAction): Promise<void> => authorizeBeforeBody(request, action);

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
