// The standalone Resolver's configuration, from the environment (DESIGN.md §7), validated with zod. Errors name
// the variable that is missing or wrong, never its value (connection strings and keys are secrets).
import { z } from 'zod';

const configSchema = z.object({
  NIMBUS_SERVICEBUS_CONNECTION_STRING: z.string({ error: 'is required' }).min(1, 'is required'),
  NIMBUS_COSMOS_ENDPOINT: z.url({ error: 'is required (an https:// or http:// URL)' }),
  NIMBUS_COSMOS_KEY: z.string({ error: 'is required' }).min(1, 'is required'),
  NIMBUS_COSMOS_DATABASE: z.string().min(1).default('nimbus'),
  NIMBUS_RESOLVER_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
  NIMBUS_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export interface ResolverConfig {
  serviceBusConnectionString: string;
  cosmos: { endpoint: string; key: string; database: string };
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
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`the Resolver cannot start; fix these environment variables:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  return {
    serviceBusConnectionString: c.NIMBUS_SERVICEBUS_CONNECTION_STRING,
    cosmos: { endpoint: c.NIMBUS_COSMOS_ENDPOINT, key: c.NIMBUS_COSMOS_KEY, database: c.NIMBUS_COSMOS_DATABASE },
    concurrency: c.NIMBUS_RESOLVER_CONCURRENCY,
    logLevel: c.NIMBUS_LOG_LEVEL,
  };
}
