// What of an alert and of a rule's last evaluation a caller may see, by the endpoints it may read
// (server/auth/readScope.ts). An alert's text can name an event id, a session id or a failure group's error text
// of one endpoint, which an endpoint's Reader must not see of another endpoint. A rule on one endpoint belongs to
// that endpoint; a site-wide rule's alert is about the endpoint it fired for (`firedFor`), or about none (counts
// and endpoint names, which every role sees in the overviews). An alert stored before `firedFor` was recorded is
// read for it from its own rule type, summary and link where the evaluator's text says (legacyFiredFor); before,
// every such alert was withheld from per-endpoint callers, even one about an endpoint they may read. Pure: the
// routes and the tests share it.
import { inScope, type ReadScope } from '../auth/readScope.ts';
import type { AlertDoc } from './model.ts';

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

/** An endpoint id as the catalog names them (server/exactIdFilters.ts): the summaries below cannot run two together. */
const EP = '([A-Za-z0-9._-]{1,50})';
/** The console pages the evaluator links to that belong to one endpoint: `/endpoints/{E}`, its events and filters. */
const ENDPOINT_LINK = /^\/endpoints\/([^/?#]+)(?:\/events\/[^/?#]+)?(?:\?.*)?$/;
/**
 * What the evaluator's summary of each rule type that names one endpoint's records says first, with that endpoint
 * (server/alerts/conditions.ts; the same text since the rules were written).
 */
const NAMED_IN_SUMMARY: Partial<Record<AlertDoc['ruleType'], RegExp>> = {
  failureRate: new RegExp(`^${EP}: \\d+ failures in a minute `),
  blockedSession: new RegExp(`^\\d+ session\\(s\\) blocked longer than [^;]*; oldest: ${EP} session `),
  pendingHandoff: new RegExp(`^\\d+ pending handoff\\(s\\) past their expected-by; first: ${EP} event `),
  newFailureGroup: new RegExp(`^new failure group on ${EP}: `),
};
/** The rule types whose text names only counts and endpoint names (conditions.ts gives them the rule's endpoint). */
const NAMES_NO_RECORDS: ReadonlySet<AlertDoc['ruleType']> = new Set(['deadLetterBacklog', 'heartbeatMissing', 'resolverLiveness']);

/**
 * Whose records an alert's text names: its `firedFor`, or for one stored before that was recorded what the alert
 * itself says - the rule's endpoint for a rule type that names no records; the endpoint its summary names first and
 * its link leads to, when both say the same one; nothing for the record the evaluator rebuilds when a fire's was lost
 * (the rule's name, linking to /alerts). Undefined (so withheld from per-endpoint callers) when the text is not one
 * the evaluator writes: a text that might name another endpoint's event is not shown on a guess.
 */
export function alertNamedEndpoint(a: Pick<AlertDoc, 'firedFor' | 'ruleType' | 'ruleName' | 'endpointId' | 'summary' | 'link'>): string | null | undefined {
  if (a.firedFor !== undefined) return a.firedFor;
  if (NAMES_NO_RECORDS.has(a.ruleType)) return a.endpointId;
  if (a.link === '/alerts' && a.summary === a.ruleName) return null;
  const inSummary = NAMED_IN_SUMMARY[a.ruleType]?.exec(a.summary)?.[1];
  const linked = ENDPOINT_LINK.exec(a.link)?.[1];
  if (inSummary === undefined || linked === undefined) return undefined;
  let linkedEndpoint: string;
  try {
    linkedEndpoint = decodeURIComponent(linked);
  } catch {
    return undefined;
  }
  return linkedEndpoint === inSummary ? inSummary : undefined;
}
