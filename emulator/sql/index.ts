// Public entry point of the SQL filter/action engine. The broker imports only from here.
import type { SqlParameters } from '../broker/api.ts';
import type { CompiledAction, CompiledFilter } from './api.ts';
import { SqlError } from './api.ts';

export { SqlError };
export type { CompiledAction, CompiledFilter, MessageView, SqlEngine } from './api.ts';
export type { SqlParameters } from '../broker/api.ts';

export function compileFilter(_sql: string, _parameters?: SqlParameters): CompiledFilter {
  throw new SqlError('SQL filters: not implemented yet');
}

export function compileAction(_sql: string, _parameters?: SqlParameters): CompiledAction {
  throw new SqlError('SQL actions: not implemented yet');
}
