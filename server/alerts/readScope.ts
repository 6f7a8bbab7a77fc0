// What of an alert and of a rule's last evaluation a caller may see, by the endpoints it may read
// (server/auth/readScope.ts). An alert's text can name an event id, a session id or a failure group's error text
// of one endpoint, which an endpoint's Reader must not see of another endpoint. A rule on one endpoint belongs to
// that endpoint; a site-wide rule's alert is about the endpoint it fired for (`firedFor`), or about none (counts
// and endpoint names, which every role sees in the overviews). Pure: the routes and the tests share it.
import { inScope, type ReadScope } from '../auth/readScope.ts';

/**
 * `whole`: the summary and link may be shown. `withheld`: that the rule fired (name, times, value) but not what
 * it names. `hidden`: the alert belongs to an endpoint the caller may not read and is left out.
 */
export type AlertVisibility = 'whole' | 'withheld' | 'hidden';

/**
 * `ruleEndpointId`: the rule's endpoint (null: site-wide). `namedEndpoint`: whose records the text names; undefined
 * when not recorded (written before it was), so not known to be harmless.
 */
export function alertVisibility(scope: ReadScope, ruleEndpointId: string | null, namedEndpoint: string | null | undefined): AlertVisibility {
  if (scope.all) return 'whole';
  if (ruleEndpointId !== null) return inScope(scope, ruleEndpointId) ? 'whole' : 'hidden';
  if (namedEndpoint === null || (namedEndpoint !== undefined && inScope(scope, namedEndpoint))) return 'whole';
  return 'withheld';
}
