// Public entry point of the SQL filter/action engine. The broker imports only from here.
// Compile once per rule (parse + closure tree), then call the result for every message.
import type { SqlParameters } from '../broker/api.ts';
import type { CompiledAction, CompiledFilter, SqlEngine } from './api.ts';
import { SqlError } from './api.ts';
import { compileExpression, compileStatement } from './compile.ts';
import type { Step } from './compile.ts';
import { parseAction, parseFilter } from './parser.ts';

export { SqlError };
export type { CompiledAction, CompiledFilter, MessageView, SqlEngine } from './api.ts';
export type { SqlParameters } from '../broker/api.ts';

/**
 * Compiles a SQL filter. The returned function is true only when the whole expression is TRUE
 * (FALSE and unknown both mean "no match"). It never throws because of a message's contents.
 * @throws SqlError for invalid SQL, an unknown system property or a missing parameter.
 */
export function compileFilter(sql: string, parameters?: SqlParameters): CompiledFilter {
  const evaluate = compileExpression(parseFilter(sql, parameters));
  return (message) => evaluate(message) === true;
}

/**
 * Compiles a SQL rule action: SET/REMOVE statements applied in order, each seeing the previous ones' effects.
 * The returned function throws only what MessageView.setSystem throws.
 * @throws SqlError for invalid SQL, an unknown or read-only system property target or a missing parameter.
 */
export function compileAction(sql: string, parameters?: SqlParameters): CompiledAction {
  const steps: Step[] = parseAction(sql, parameters).map(compileStatement);
  if (steps.length === 1) return steps[0] as Step;
  return (message) => {
    for (let i = 0; i < steps.length; i++) (steps[i] as Step)(message);
  };
}

/** The engine as an object, for callers that take an SqlEngine. */
export const sqlEngine: SqlEngine = { compileFilter, compileAction };
