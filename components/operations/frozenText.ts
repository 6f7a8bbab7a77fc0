// What a bulk job's confirmation says of the rows it froze, from the prepare answer (POST /api/operations with
// `hold`): the endpoints they are on - not the page's list, which may count another window - and the endpoints left
// out because the caller may only read there (server/operations/actableRows.ts). Kept apart from React so the
// words are tested.
import type { LeftOutEndpoint } from '../../server/operations/actableRows.ts';

const n = (v: number) => v.toLocaleString('en-US');
const events = (v: number) => `${n(v)} ${v === 1 ? 'event' : 'events'}`;

/** "on crmendpoint", "on billingendpoint and crmendpoint", "on a, b and c"; empty for no endpoint. */
export function frozenOn(endpoints: readonly string[]): string {
  if (endpoints.length === 0) return '';
  if (endpoints.length === 1) return `on ${endpoints[0]}`;
  return `on ${endpoints.slice(0, -1).join(', ')} and ${endpoints[endpoints.length - 1]}`;
}

/** One sentence per endpoint left out: how many events, and the authorization's reason. Empty when none. */
export function leftOutLines(kind: 'resubmit' | 'skip', leftOut: readonly LeftOutEndpoint[]): string[] {
  const verb = kind === 'resubmit' ? 'resubmitted' : 'skipped';
  return leftOut.map((l) => `${events(l.events)} on ${l.endpointId} will not be ${verb}: ${l.reason}.`);
}
