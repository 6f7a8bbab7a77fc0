// Settling a handoff through the Agent API: the very path of the operator's handoff routes (Manager.execute:
// claim with compare-and-swap, the command on the Manager topic, the receipt in the event's audit trail with the
// agent as auditor). One difference: a second settlement is refused (409) rather than answered `duplicate`, so an
// agent learns that the event is no longer its to settle (an operator or another agent did it, or its own earlier
// attempt got through); the SDK's AgentClient reports a 409 as found settled, with this text (onSettled's 4th
// argument), not as its own settlement: receive does not claim, so the one found may be another's. A second
// settlement with a different error text or note is refused by the Manager itself (409, saying when the first was
// sent, and by whom only to a caller who may read the event's audit trail: an Agent-only caller is told "another
// principal" - docs/agents.md). Every 409 that says the handoff is settled carries `code: 'settled'`
// (HANDOFF_SETTLED_CODE): the only one an agent may take as settled and drop its result for.
import { actorOf, type Authorized } from '../auth/authorize.ts';
import { inScope, scopeOf } from '../auth/readScope.ts';
import type { ConsoleContext } from '../context.ts';
import { conflict } from '../http.ts';
import { HANDOFF_SETTLED_CODE, type CommandResult } from '../manager/manager.ts';
import type { SettleBody } from './schemas.ts';

export async function settleHandoff(ctx: ConsoleContext, body: SettleBody, who: Pick<Authorized, 'user' | 'principal' | 'assignments'>): Promise<CommandResult> {
  const spec =
    body.outcome === 'completed'
      ? { kind: 'handoffComplete' as const, messageId: body.messageId, note: body.note, result: body.result }
      : { kind: 'handoffFail' as const, messageId: body.messageId, errorText: body.errorText!, errorType: body.errorType };
  // An Operator (or Reader) on the endpoint reads the names in the event's audit trail anyway; an Agent role does not.
  const mayReadAudits = inScope(scopeOf(who.assignments), body.endpointId);
  const r = await ctx.manager.execute(body.endpointId, body.eventId, spec, actorOf(who), undefined, { mayReadAudits });
  if (r.outcome === 'duplicate')
    throw conflict(`the handoff of event ${body.eventId} is already settled (${body.outcome === 'completed' ? 'completion' : 'failure'} ${r.messageId} was sent)`, HANDOFF_SETTLED_CODE);
  return r;
}
