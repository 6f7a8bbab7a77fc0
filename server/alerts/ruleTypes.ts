// The alert rule kinds, apart from the rule schemas in model.ts: the console's URL state (components/urlState.ts)
// needs the list in every page's first-load bundle, and model.ts would bring the whole of zod with it.
export const RULE_TYPES = [
  'failureRate',
  'newFailureGroup',
  'deadLetterBacklog',
  'blockedSession',
  'pendingHandoff',
  'heartbeatMissing',
  'resolverLiveness',
] as const;
export type RuleType = (typeof RULE_TYPES)[number];
