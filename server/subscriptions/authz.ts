// Authorization of the operations pages' actions (replay, pause/resume, purge, rule restore, reconcile,
// heartbeat settings). server/auth.ts has no action for these yet; until it does, they require what a
// resubmit requires (the strongest operator right it knows), so a future role check cannot leave them open.
import { authorize, type Principal } from '../auth.ts';

export type OpsAction = 'replay' | 'subscription' | 'reconcile' | 'heartbeat';

export function authorizeOps(request: Request, _what: OpsAction): Principal {
  return authorize(request, 'resubmit');
}
