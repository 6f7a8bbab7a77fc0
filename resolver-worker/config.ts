// The standalone Resolver's configuration, from the environment (DESIGN.md §7), validated with zod. Errors name
// the variable that is missing or wrong, never its value (connection strings and keys are secrets).
import { z } from 'zod';
import { serviceBusConnectionFromEnv, type ServiceBusConnection } from '@nimbus/sdk/servicebus';
import { cosmosKeyProblem } from '@nimbus/sdk/cosmos';

const configSchema = z.object({
  // Service Bus: a connection string or a namespace (Microsoft Entra identity), chosen by serviceBusConnectionFromEnv.
  NIMBUS_COSMOS_ENDPOINT: z.url({ error: 'is required (an https:// or http:// URL)' }),
  // Without a key the store signs in with DefaultAzureCredential.
  NIMBUS_COSMOS_KEY: z.string().min(1).optional(),
  NIMBUS_COSMOS_DATABASE: z.string().min(1).default('nimbus'),
  NIMBUS_RESOLVER_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
  NIMBUS_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export interface ResolverConfig {
  serviceBusConnection: ServiceBusConnection;
  cosmos: { endpoint: string; key?: string; database: string };
  concurrency: number;
  logLevel: z.output<typeof configSchema>['NIMBUS_LOG_LEVEL'];
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function readResolverConfig(env: Record<string, string | undefined> = process.env): ResolverConfig {
  // Empty variables count as unset.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(cleaned);
  const serviceBus = serviceBusConnectionFromEnv(cleaned);
  const keyProblem = cosmosKeyProblem(cleaned.NIMBUS_COSMOS_ENDPOINT, cleaned.NIMBUS_COSMOS_KEY);
  if (!parsed.success || !serviceBus.ok || keyProblem) {
    const lines = [
      ...(parsed.success ? [] : parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`)),
      ...(serviceBus.ok ? [] : serviceBus.problems.map((p) => `  ${p}`)),
      ...(keyProblem ? [`  ${keyProblem}`] : []),
    ];
    throw new ConfigError(`the Resolver cannot start; fix these environment variables:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  return {
    serviceBusConnection: serviceBus.connection,
    cosmos: {
      endpoint: c.NIMBUS_COSMOS_ENDPOINT,
      ...(c.NIMBUS_COSMOS_KEY !== undefined ? { key: c.NIMBUS_COSMOS_KEY } : {}),
      database: c.NIMBUS_COSMOS_DATABASE,
    },
    concurrency: c.NIMBUS_RESOLVER_CONCURRENCY,
    logLevel: c.NIMBUS_LOG_LEVEL,
  };
}
