// Monitor's bands: which of Failing / Watching / Healthy an endpoint is shown in, from what the overview says of it.
// Pure, so the rule is tested without a browser (monitorBands.test.ts).
import type { EndpointOverview } from './api.ts';

export type Band = 'Failing' | 'Watching' | 'Healthy';

export function bandOf(e: EndpointOverview): Band {
  if (e.counts.failed > 0 || e.heartbeat.status === 'Off') return 'Failing';
  // Unreadable counters are zeros that mean "unknown" (the document no longer parses): nothing shows the endpoint is
  // healthy, and its card says why it is watched.
  if (e.countersUnreadable) return 'Watching';
  // So is a heartbeat whose overdue probe could not be checked (its last answer unreadable): the status shown is the
  // last settled one, not a current one, and its card says "Evidence unknown".
  if (e.heartbeat.evidenceUnknown) return 'Watching';
  if (e.counts.deferred > 0 || e.counts.handoff > 0 || e.counts.pending > 50) return 'Watching';
  return 'Healthy';
}
