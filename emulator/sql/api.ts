// Contract between the SQL filter/action engine (emulator/sql) and the broker core (emulator/broker).
// The engine never sees AMQP: it reads and writes a message through this view.

import type { SqlParameters } from '../broker/api.ts';

/**
 * A message as rule filters and actions see it.
 * System properties are addressed by their Service Bus SQL names, case-insensitive, passed here lower-cased:
 * messageid, correlationid, to, replyto, label (also subject), sessionid, replytosessionid, contenttype,
 * deliverycount, enqueuedtimeutc, sequencenumber, scheduledenqueuetimeutc, expiresatutc, size, timetolive.
 * User (application) properties keep their own case, as on Azure.
 */
export interface MessageView {
  /** undefined when the property is absent. */
  getSystem(name: string): unknown;
  /** Throws SqlError if the property cannot be set (read-only system property). */
  setSystem(name: string, value: unknown): void;
  getUser(name: string): unknown; // undefined when absent
  hasUser(name: string): boolean;
  setUser(name: string, value: unknown): void;
  removeUser(name: string): void;
}

export type CompiledFilter = (message: MessageView) => boolean;
export type CompiledAction = (message: MessageView) => void;

/** Raised for invalid SQL at compile time (with position and a readable reason) and for evaluation failures. */
export class SqlError extends Error {
  constructor(
    message: string,
    readonly position?: number,
  ) {
    super(message);
    this.name = 'SqlError';
  }
}

export interface SqlEngine {
  compileFilter(sql: string, parameters?: SqlParameters): CompiledFilter;
  compileAction(sql: string, parameters?: SqlParameters): CompiledAction;
}
