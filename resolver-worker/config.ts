// The standalone Resolver's configuration, from the environment (DESIGN.md §7), validated with zod. Errors name
// the variable that is missing or wrong, never its value (connection strings and keys are secrets).
import { z } from 'zod';
import { serviceBusConnectionFromEnv, type ServiceBusConnection } from '@nimbus/sdk/servicebus';
import { cosmosKeyProblem } from '@nimbus/sdk/cosmos';

/**
 * The broker's part of a stop, by default (ms): the client's own wait for an unanswered settlement is 60 s with
 * retries; this leaves a container platform's 30 s grace period room for the store's close after it.
 */
export const DEFAULT_BROKER_STOP_MS = 5_000;

/**
 * The stored time-series flush of a stop (ms, startResolver's `seriesStopMs`): bounded, so a store that does not
 * answer cannot hold back the counter flush behind it (docs/resolver.md "Stopping").
 */
export const DEFAULT_SERIES_STOP_MS = 3_000;

/** The store's part: also what `npm run recount` reads (readStoreConfig), so it runs with the Resolver's settings. */
const storeSchema = z.object({
  NIMBUS_COSMOS_ENDPOINT: z.url({ error: 'is required (an https:// or http:// URL)' }),
  // Without a key the store signs in with DefaultAzureCredential.
  NIMBUS_COSMOS_KEY: z.string().min(1).optional(),
  NIMBUS_COSMOS_DATABASE: z.string().min(1).default('nimbus'),
});

const configSchema = storeSchema.extend({
  // Service Bus: a connection string or a namespace (Microsoft Entra identity), chosen by serviceBusConnectionFromEnv.
  NIMBUS_RESOLVER_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
  // The broker's part of a stop (settlements in flight, closes): given up after this (docs/resolver.md "Stopping").
  NIMBUS_RESOLVER_BROKER_STOP_MS: z.coerce.number().int().min(0).max(600_000).default(DEFAULT_BROKER_STOP_MS),
  NIMBUS_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export interface StoreConfig {
  endpoint: string;
  key?: string;
  database: string;
}

export interface ResolverConfig {
  serviceBusConnection: ServiceBusConnection;
  cosmos: StoreConfig;
  concurrency: number;
  brokerStopMs: number;
  logLevel: z.output<typeof configSchema>['NIMBUS_LOG_LEVEL'];
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

// Empty variables count as unset.
const withoutEmpty = (env: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ''));

const issueLines = (issues: readonly z.core.$ZodIssue[]): string[] => issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);

const storeConfigOf = (c: z.output<typeof storeSchema>): StoreConfig => ({
  endpoint: c.NIMBUS_COSMOS_ENDPOINT,
  ...(c.NIMBUS_COSMOS_KEY !== undefined ? { key: c.NIMBUS_COSMOS_KEY } : {}),
  database: c.NIMBUS_COSMOS_DATABASE,
});

/**
 * The store settings alone, read as the Resolver reads them (the same variables, the same rules), for tools that
 * open the Resolver's store without its bus (`npm run recount`). `who` starts the error: "<who> cannot start".
 */
export function readStoreConfig(env: Record<string, string | undefined> = process.env, who = 'the recount'): StoreConfig {
  const cleaned = withoutEmpty(env);
  const parsed = storeSchema.safeParse(cleaned);
  const keyProblem = cosmosKeyProblem(cleaned.NIMBUS_COSMOS_ENDPOINT, cleaned.NIMBUS_COSMOS_KEY);
  if (!parsed.success || keyProblem) {
    const lines = [...(parsed.success ? [] : issueLines(parsed.error.issues)), ...(keyProblem ? [`  ${keyProblem}`] : [])];
    throw new ConfigError(`${who} cannot start; fix these environment variables:\n${lines.join('\n')}`);
  }
  return storeConfigOf(parsed.data);
}

export function readResolverConfig(env: Record<string, string | undefined> = process.env): ResolverConfig {
  const cleaned = withoutEmpty(env);
  const parsed = configSchema.safeParse(cleaned);
  const serviceBus = serviceBusConnectionFromEnv(cleaned);
  const keyProblem = cosmosKeyProblem(cleaned.NIMBUS_COSMOS_ENDPOINT, cleaned.NIMBUS_COSMOS_KEY);
  if (!parsed.success || !serviceBus.ok || keyProblem) {
    const lines = [
      ...(parsed.success ? [] : issueLines(parsed.error.issues)),
      ...(serviceBus.ok ? [] : serviceBus.problems.map((p) => `  ${p}`)),
      ...(keyProblem ? [`  ${keyProblem}`] : []),
    ];
    throw new ConfigError(`the Resolver cannot start; fix these environment variables:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  return {
    serviceBusConnection: serviceBus.connection,
    cosmos: storeConfigOf(c),
    concurrency: c.NIMBUS_RESOLVER_CONCURRENCY,
    brokerStopMs: c.NIMBUS_RESOLVER_BROKER_STOP_MS,
    logLevel: c.NIMBUS_LOG_LEVEL,
  };
}
