// The Audit page's "Hide agent API calls" preset. An agent's calls cannot be told apart by actor: with sign-in off
// (the demo) the ledger agent is the anonymous Owner like everyone else. Its actions can - every Agent API call is
// logged as `agent.*` (server/auth/roles.ts) - so the preset is the `agent.` part of "Action does not contain",
// kept in the URL with the other filters. Pure, so it is tested directly (agentCalls.test.ts).
import { AUDIT_TEXT_FILTER_MAX } from '../../server/audit/auditTextFilters.ts';

/** The part of an action name every Agent API action has. */
export const AGENT_ACTIONS = 'agent.';

const parts = (notAction: string) =>
  notAction
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');

/** Whether "Action does not contain" already leaves out every Agent API action. */
export function hidesAgentCalls(notAction: string): boolean {
  return parts(notAction).some((p) => p.toLowerCase() === AGENT_ACTIONS);
}

/** "Action does not contain" with the agent preset added or taken out; the operator's other parts are kept. */
export function withAgentCalls(notAction: string, hidden: boolean): string {
  const others = parts(notAction).filter((p) => p.toLowerCase() !== AGENT_ACTIONS);
  return (hidden ? [...others, AGENT_ACTIONS] : others).join(', ');
}

/**
 * Why the box cannot be applied as asked, or undefined: with `agent.` added "Action does not contain" would be longer
 * than the route and the URL state take, and the URL state reads such a value as no filter at all - the log would
 * drop the operator's whole filter while the box showed the agent's calls hidden.
 */
export function agentCallsRefusal(notAction: string): string | undefined {
  const max = AUDIT_TEXT_FILTER_MAX.notAction;
  if (notAction.trim().length <= max) return undefined;
  return `Hide agent API calls is not applied: "Action does not contain" would be over ${max} characters with ${AGENT_ACTIONS} added; take a part out first.`;
}
