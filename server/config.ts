// The console's configuration, read from the environment (DESIGN.md §7) and validated once. A missing or bad
// setting is one ConfigError naming every problem variable - never a value, since some of them are secrets.
import { z } from 'zod';
import { authConfigProblems, loadAuthConfig, type AuthConfig } from './auth/config.ts';
import { backgroundDutiesOn } from './background.ts';
import { serviceBusConnectionFromEnv, type ServiceBusConnection } from '@nimbus/sdk/servicebus';
import { cosmosKeyProblem } from '@nimbus/sdk/cosmos';

export const DEFAULT_CATALOG_PATH = 'catalog/demo.json';

/**
 * Default NIMBUS_STOP_GRACE_MS (server/shutdown.ts): inside `docker stop`'s 10 s before SIGKILL, and well inside the
 * 30 s Azure Container Apps and Kubernetes give by default.
 */
export const DEFAULT_STOP_GRACE_MS = 8_000;

/**
 * Default NIMBUS_JOB_RETENTION_DAYS (server/operations/prune.ts): how long an ended bulk job's documents are kept -
 * long enough that last month's jobs still answer from the audit log and the Jobs drawer.
 */
export const DEFAULT_JOB_RETENTION_DAYS = 30;

const nonEmpty = (what: string) => z.string({ error: `${what} is not set` }).trim().min(1, `${what} is empty`);

/**
 * A setting that is a whole number of `unit` from `min` to `max` (`maxInWords` says what the most is), `fallback`
 * when unset. Spaces alone (a compose file's `VAR= `) are unset too: coerced, they were 0 and refused.
 */
const wholeNumber = (name: string, unit: string, min: number, max: number, maxInWords: string, fallback: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
    z.coerce
      .number({ error: `${name} must be a number of ${unit}` })
      .int(`${name} must be a whole number of ${unit}`)
      .min(min, `${name} must be at least ${min}`)
      .max(max, `${name} must be at most ${max} (${maxInWords})`)
      .default(fallback),
  );

// Service Bus: NIMBUS_SERVICEBUS_CONNECTION_STRING (SAS key) or NIMBUS_SERVICEBUS_NAMESPACE (Microsoft Entra identity),
// exactly one (packages/sdk/src/servicebus/namespace.ts). Cosmos: NIMBUS_COSMOS_KEY, or without it Microsoft Entra identity.
export const consoleEnvSchema = z.object({
  NIMBUS_SERVICEBUS_CONNECTION_STRING: nonEmpty('the Service Bus connection string')
    .refine((v) => /(^|;)\s*Endpoint\s*=\s*sb:\/\//i.test(v), 'the Service Bus connection string has no Endpoint=sb://… part')
    .optional(),
  NIMBUS_SERVICEBUS_NAMESPACE: z.string().optional(),
  NIMBUS_COSMOS_ENDPOINT: nonEmpty('the Cosmos DB endpoint').pipe(
    z.url({ protocol: /^https?$/, error: 'the Cosmos DB endpoint is not an http(s) URL' }),
  ),
  NIMBUS_COSMOS_KEY: nonEmpty('the Cosmos DB key').optional(),
  NIMBUS_COSMOS_DATABASE: z
    .string()
    .trim()
    .regex(/^[^/\\?#]{1,255}$/, 'the Cosmos database name must not contain / \\ ? #')
    .default('nimbus'),
  NIMBUS_CATALOG: z.string().trim().min(1).default(DEFAULT_CATALOG_PATH),
  NIMBUS_AUTH: z.enum(['off', 'entra', 'oidc'], { error: 'NIMBUS_AUTH must be off, entra or oidc' }).default('off'),
  // How long a stop on SIGTERM/SIGINT may take before the process exits anyway (server/shutdown.ts). Spaces alone
  // are unset, as the stop itself reads them.
  NIMBUS_STOP_GRACE_MS: wholeNumber('NIMBUS_STOP_GRACE_MS', 'milliseconds', 100, 600_000, '10 minutes', DEFAULT_STOP_GRACE_MS),
  // How many days an ended bulk job's documents (the job, its control, its frozen selection) are kept before the
  // runner deletes them (server/operations/prune.ts).
  NIMBUS_JOB_RETENTION_DAYS: wholeNumber('NIMBUS_JOB_RETENTION_DAYS', 'days', 1, 3650, 'ten years', DEFAULT_JOB_RETENTION_DAYS),
  // The local emulator's AMQPS port, never an alert target (server/alerts/channelTarget.ts reads it where a notice is
  // checked); `npm start` sets it to the port its emulator listens on. Checked here so a typo is not silently 5671.
  NIMBUS_EMULATOR_TLS_PORT: z.preprocess(
    (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
    z
      .string()
      .trim()
      .regex(/^\d{1,5}$/, 'NIMBUS_EMULATOR_TLS_PORT must be a port number (1-65535, or 0)')
      // 0 is `npm start`'s "any free port": it hands its console the port it got, but with an external Service Bus it
      // starts no emulator and the 0 stays in the environment; the alert check then keeps its default (5671).
      .refine((v) => Number(v) >= 0 && Number(v) <= 65535, 'NIMBUS_EMULATOR_TLS_PORT must be a port number (1-65535, or 0)')
      .optional(),
  ),
});

export interface ConsoleConfig {
  /** A connection string, or a namespace signed in to with DefaultAzureCredential. */
  serviceBusConnection: ServiceBusConnection;
  /** Without a key the store signs in with DefaultAzureCredential. */
  cosmos: { endpoint: string; key?: string; database: string };
  catalogPath: string;
  auth: 'off' | 'entra' | 'oidc';
  /** The sign-in settings (server/auth/config.ts): provider, client, session secret and lifetime. */
  authConfig: AuthConfig;
  /** Whether this replica runs the background duties, the bulk-job runner among them (NIMBUS_BACKGROUND). */
  background: boolean;
  /** How long a stop may take before the process exits anyway (NIMBUS_STOP_GRACE_MS). */
  stopGraceMs: number;
  /** Days an ended bulk job's documents are kept before they are deleted (NIMBUS_JOB_RETENTION_DAYS). */
  jobRetentionDays: number;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Reads the console's settings; throws one ConfigError listing every problem (variable names only). */
export function loadConsoleConfig(env: Record<string, string | undefined> = process.env): ConsoleConfig {
  // Empty strings count as unset, so `VAR= npm start` reads like a missing variable.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = consoleEnvSchema.safeParse(cleaned);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((i) => `${String(i.path[0] ?? 'environment')}: ${i.message}`);
  const serviceBus = serviceBusConnectionFromEnv(cleaned);
  if (!serviceBus.ok) problems.push(...serviceBus.problems);
  const keyProblem = cosmosKeyProblem(cleaned.NIMBUS_COSMOS_ENDPOINT, cleaned.NIMBUS_COSMOS_KEY);
  if (keyProblem) problems.push(keyProblem);
  // The sign-in settings join the same one message (a bad NIMBUS_AUTH is already named above).
  for (const p of authConfigProblems(env)) if (!p.startsWith('NIMBUS_AUTH:') || !problems.some((q) => q.startsWith('NIMBUS_AUTH:'))) problems.push(p);
  if (!parsed.success || !serviceBus.ok || problems.length > 0) throw new ConfigError(`the console is not configured: ${problems.join('; ')}`);
  const e = parsed.data;
  return {
    serviceBusConnection: serviceBus.connection,
    cosmos: {
      endpoint: e.NIMBUS_COSMOS_ENDPOINT,
      ...(e.NIMBUS_COSMOS_KEY !== undefined ? { key: e.NIMBUS_COSMOS_KEY } : {}),
      database: e.NIMBUS_COSMOS_DATABASE,
    },
    catalogPath: e.NIMBUS_CATALOG,
    auth: e.NIMBUS_AUTH,
    authConfig: loadAuthConfig(env),
    background: backgroundDutiesOn(env),
    stopGraceMs: e.NIMBUS_STOP_GRACE_MS,
    jobRetentionDays: e.NIMBUS_JOB_RETENTION_DAYS,
  };
}
