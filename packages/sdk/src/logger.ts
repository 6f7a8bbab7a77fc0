// The SDK's default logger, used when a host or processor is given none: pino (JSON lines on stdout) at the level in
// NIMBUS_LOG_LEVEL, `info` by default, so a host that cannot reach its broker says so without any setup. Under
// `node --test` (NODE_TEST_CONTEXT) the default is `silent`, as the console's own logger does; NIMBUS_LOG_LEVEL wins.
import { pino } from 'pino';
import type { Logger } from 'pino';

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
type Level = (typeof LEVELS)[number];

/** The level NIMBUS_LOG_LEVEL names; an unknown value falls back to `info` (and says so once). */
export function sdkLogLevel(env: NodeJS.ProcessEnv = process.env): { level: Level; unknown?: string } {
  const raw = env.NIMBUS_LOG_LEVEL?.trim().toLowerCase();
  if (raw === undefined || raw === '') return { level: env.NODE_TEST_CONTEXT ? 'silent' : 'info' };
  if ((LEVELS as readonly string[]).includes(raw)) return { level: raw as Level };
  return { level: 'info', unknown: raw };
}

let shared: Logger | undefined;

/** One logger per process for every SDK component that was given none. */
export function defaultSdkLogger(): Logger {
  if (shared) return shared;
  const { level, unknown } = sdkLogLevel();
  shared = pino({ name: 'nimbus-sdk', level });
  if (unknown !== undefined)
    shared.warn(`NIMBUS_LOG_LEVEL '${unknown}' is not a pino level (${LEVELS.join(', ')}); logging at info`);
  return shared;
}
