// One operator action has two names: the event page's audit trail shows the Manager's per-event audit type
// (lib/store AuditType: `ResubmitWithChanges`, `CompleteHandoff`), the Audit page the console's audit log action
// (server/auth/roles.ts: `resubmit`, `handoff`, `agent.settle`, with the edit or the settlement in the details).
// Both stores keep their names (records already written stay readable); these helpers put the two side by side, so
// an operator can get from what one page shows to the same act on the other.

type Details = Record<string, unknown> | null | undefined;

/**
 * The name the event page's audit trail gives the act an audit log entry records, or null when the trail has no
 * entry of its own for it (reads, grants, bulk jobs - their per-event entries come from the jobs' own commands).
 */
export function eventTrailName(r: { action: string; details?: Details }): string | null {
  const settlement = r.details?.settlement;
  switch (r.action) {
    case 'resubmit':
      return r.details?.edited === true ? 'ResubmitWithChanges' : 'Resubmit';
    case 'skip':
      return 'Skip';
    case 'handoff':
    case 'agent.settle':
      if (settlement === 'complete' || settlement === 'completed') return 'CompleteHandoff';
      if (settlement === 'fail' || settlement === 'failed') return 'FailHandoff';
      return null;
    default:
      return null;
  }
}

/**
 * The Audit page filtered to what the log recorded for this event: by event id and, where the trail's type has one
 * log action, that action. A handoff settlement is logged as `handoff` (console, MCP) or `agent.settle` (Agent
 * API), and the Audit filter matches one part of a name, so for those the event id alone narrows it.
 */
export function auditLogHref(eventId: string, trailType: string): string {
  const action: Record<string, string> = {
    Resubmit: 'resubmit',
    ResubmitWithChanges: 'resubmit',
    Skip: 'skip',
  };
  const q = new URLSearchParams({ eventId });
  const a = action[trailType];
  if (a) q.set('action', a);
  return `/audit?${q.toString()}`;
}
