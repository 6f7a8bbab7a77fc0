// The Audit page's "Hide agent API calls" preset. An agent's calls cannot be told apart by actor: with sign-in off
// (the demo) the ledger agent is the anonymous Owner like everyone else. Its actions can - every Agent API call is
// logged as `agent.*` (server/auth/roles.ts) - so the preset is the `agent.` part of "Action does not contain",
// kept in the URL with the other filters. Pure, so it is tested directly (agentCalls.test.ts).

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
