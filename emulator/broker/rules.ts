// Compiles rule descriptions into predicates and actions. SQL goes to emulator/sql; true/false/correlation
// filters are evaluated here. Compilation happens once, when a rule is created or loaded.

import { compileAction, compileFilter, SqlError } from '../sql/index.ts';
import type { MessageView } from '../sql/api.ts';
import { BrokerError } from './api.ts';
import type { RuleDescription, RuleFilter } from './api.ts';

export interface CompiledRule {
  description: RuleDescription;
  createdAt: number;
  matches: (view: MessageView) => boolean;
  action?: (view: MessageView) => void;
}

export function compileRule(description: RuleDescription, createdAt: number): CompiledRule {
  try {
    const matches = compileRuleFilter(description.filter);
    const a = description.action;
    const action =
      a && a.sqlExpression.trim().length > 0 ? compileAction(a.sqlExpression, a.parameters) : undefined;
    return action ? { description, createdAt, matches, action } : { description, createdAt, matches };
  } catch (err) {
    if (err instanceof SqlError || err instanceof BrokerError) {
      throw new BrokerError('BadRequest', err.message);
    }
    throw err;
  }
}

function compileRuleFilter(filter: RuleFilter): (view: MessageView) => boolean {
  switch (filter.kind) {
    case 'true':
      return () => true;
    case 'false':
      return () => false;
    case 'sql': {
      const expr = filter.sqlExpression.trim();
      // The admin client sends '1=1' for TrueFilter-like SQL; the engine handles it, but skip it for speed.
      if (expr === '1=1') return () => true;
      if (expr === '1=0') return () => false;
      return compileFilter(filter.sqlExpression, filter.parameters);
    }
    case 'correlation':
      return correlationMatcher(filter);
    default:
      throw new BrokerError('BadRequest', 'Unknown filter kind.');
  }
}

type CorrelationFilter = Extract<RuleFilter, { kind: 'correlation' }>;

const SYSTEM_FIELDS: Array<[keyof CorrelationFilter, string]> = [
  ['correlationId', 'correlationid'],
  ['messageId', 'messageid'],
  ['to', 'to'],
  ['replyTo', 'replyto'],
  ['subject', 'label'],
  ['sessionId', 'sessionid'],
  ['replyToSessionId', 'replytosessionid'],
  ['contentType', 'contenttype'],
];

function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Date || b instanceof Date) {
    const ta = a instanceof Date ? a.getTime() : typeof a === 'number' ? a : NaN;
    const tb = b instanceof Date ? b.getTime() : typeof b === 'number' ? b : NaN;
    return ta === tb;
  }
  if (a === null || a === undefined || b === null || b === undefined) return a === b;
  if (typeof a === 'number' && typeof b === 'number') return a === b;
  return typeof a === typeof b ? a === b : String(a) === String(b);
}

/** Every property the filter names must be present on the message with an equal value (AND of exact matches). */
function correlationMatcher(filter: CorrelationFilter): (view: MessageView) => boolean {
  const system = SYSTEM_FIELDS.filter(([k]) => filter[k] !== undefined && filter[k] !== null).map(
    ([k, sql]) => [sql, filter[k]] as const,
  );
  const user = Object.entries(filter.applicationProperties ?? {});
  return (view) => {
    for (const [sql, expected] of system) {
      const v = view.getSystem(sql);
      if (v === undefined || String(v) !== String(expected)) return false;
    }
    for (const [name, expected] of user) {
      if (!view.hasUser(name) || !sameValue(view.getUser(name), expected)) return false;
    }
    return true;
  };
}
