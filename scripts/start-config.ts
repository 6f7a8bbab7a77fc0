// `npm start` configuration: DESIGN.md §7's variables (plus the demo's knobs and the log level), read
// from the environment and validated with zod. A bad setting yields one sentence naming the variable, never the
// value of a secret (connection strings and keys are checked but not echoed).
import { isIP } from 'node:net';
import { z } from 'zod';
import { parseConnectionString } from '@nimbus/sdk/servicebus';

export type ServiceBusSetting =
  | {
      kind: 'embedded';
      port: number;
      /** Absent: the emulator keeps messages in memory only (tests). */ dataDir?: string;
      /** NIMBUS_EMULATOR_KEY: the namespace key, so that other tools can connect; absent = random per start. */
      key?: string;
      /** NIMBUS_EMULATOR_TLS_PORT: also an AMQPS listener there (0 = any free port); absent = none. */
      tlsPort?: number;
    }
  | { kind: 'external'; connectionString: string; /** host name, safe to log */ host: string };

export type CosmosSetting =
  | {
      kind: 'embedded';
      port: number;
      /** Absent: the embedded server keeps its data in memory only (tests). */ dataDir?: string;
    }
  | { kind: 'external'; endpoint: string; key: string };

export type AuthMode = 'entra' | 'oidc' | 'off';

export interface StartConfig {
  serviceBus: ServiceBusSetting;
  cosmos: CosmosSetting;
  database: string;
  catalogPath: string;
  dataDir: string;
  auth: AuthMode;
  /**
   * enabled: NIMBUS_CONSOLE (default 1); 0 runs the platform headless (the demo without a UI, tests).
   * dev: NIMBUS_CONSOLE_DEV (`npm run dev`): the console under Next's development server (hot reload, no build).
   */
  console: { enabled: boolean; port: number; hostname: string; dev: boolean };
  /**
   * operatorCases: orders in the traffic's opening that wait for an operator (NIMBUS_DEMO_OPERATOR_CASES);
   * slowHandoffMs: how long the ERP's slow ledger imports stay pending handoffs (NIMBUS_DEMO_SLOW_HANDOFF_SECONDS).
   */
  demo: {
    enabled: boolean;
    ratePerSecond: number;
    seed: number;
    operatorCases: number;
    slowHandoffMs: number;
  };
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Settings that were ignored, with why (printed at startup). */
  notes: string[];
}

export type ConfigResult = { ok: true; config: StartConfig } | { ok: false; message: string };

/** Unset and blank values are the same thing: a blank line in an .env file must not turn a setting on. */
const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const port = (name: string, fallback: number) =>
  optionalText.pipe(
    z
      .string()
      .regex(/^\d{1,5}$/, `${name} must be a port number (0-65535)`)
      .transform(Number)
      .refine((n) => n <= 65535, `${name} must be a port number (0-65535)`)
      .optional()
      .transform((v) => v ?? fallback),
  );

/** A port that may be left unset (undefined). */
const optionalPort = (name: string) =>
  optionalText.pipe(
    z
      .string()
      .regex(/^\d{1,5}$/, `${name} must be a port number (0-65535)`)
      .transform(Number)
      .refine((n) => n <= 65535, `${name} must be a port number (0-65535)`)
      .optional(),
  );

const flag = (name: string) =>
  optionalText.pipe(
    z
      .enum(['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off'], { error: `${name} must be 1 or 0` })
      .transform((v) => ['1', 'true', 'yes', 'on'].includes(v))
      .optional(),
  );

const envSchema = z.object({
  NIMBUS_SERVICEBUS_CONNECTION_STRING: optionalText,
  NIMBUS_COSMOS_ENDPOINT: optionalText.pipe(
    z
      .url({
        protocol: /^https?$/,
        error:
          'NIMBUS_COSMOS_ENDPOINT must be an http(s) URL, e.g. https://myaccount.documents.azure.com:443/',
      })
      .optional(),
  ),
  NIMBUS_COSMOS_KEY: optionalText,
  NIMBUS_COSMOS_DATABASE: optionalText.pipe(
    z
      .string()
      .max(255, 'NIMBUS_COSMOS_DATABASE must be at most 255 characters')
      .regex(/^[^/\\?#]+$/, 'NIMBUS_COSMOS_DATABASE must not contain / \\ ? #')
      .default('nimbus'),
  ),
  NIMBUS_CATALOG: optionalText.transform((v) => v ?? 'catalog/demo.json'),
  NIMBUS_DATA_DIR: optionalText.transform((v) => v ?? '.nimbus'),
  NIMBUS_EMULATOR_PORT: port('NIMBUS_EMULATOR_PORT', 5672),
  NIMBUS_EMULATOR_TLS_PORT: optionalPort('NIMBUS_EMULATOR_TLS_PORT'),
  // Checked here with the emulator's own rule, so a bad key is one sentence before anything starts. Never echoed.
  NIMBUS_EMULATOR_KEY: optionalText.pipe(
    z
      .string()
      .min(16, 'NIMBUS_EMULATOR_KEY must have at least 16 characters')
      .max(256, 'NIMBUS_EMULATOR_KEY must have at most 256 characters')
      .regex(/^[A-Za-z0-9+/_-]+=*$/, 'NIMBUS_EMULATOR_KEY may use base64 characters only')
      .optional(),
  ),
  NIMBUS_COSMOS_PORT: port('NIMBUS_COSMOS_PORT', 8081),
  PORT: port('PORT', 3000),
  HOSTNAME: optionalText,
  NIMBUS_AUTH: optionalText.pipe(
    z.enum(['entra', 'oidc', 'off'], { error: 'NIMBUS_AUTH must be entra, oidc or off' }).optional(),
  ),
  NIMBUS_DEMO: flag('NIMBUS_DEMO'),
  NIMBUS_CONSOLE: flag('NIMBUS_CONSOLE'),
  NIMBUS_CONSOLE_DEV: flag('NIMBUS_CONSOLE_DEV'),
  NIMBUS_DEMO_RATE: optionalText
    .transform((v) => (v === undefined ? 2 : Number(v)))
    .pipe(
      z
        .number({ error: 'NIMBUS_DEMO_RATE must be a number of events per second' })
        .min(0, 'NIMBUS_DEMO_RATE must be between 0 and 50 events per second')
        .max(50, 'NIMBUS_DEMO_RATE must be between 0 and 50 events per second'),
    ),
  NIMBUS_DEMO_SEED: optionalText
    .transform((v) => (v === undefined ? 42 : Number(v)))
    .pipe(
      z.number({ error: 'NIMBUS_DEMO_SEED must be an integer' }).int('NIMBUS_DEMO_SEED must be an integer'),
    ),
  NIMBUS_DEMO_OPERATOR_CASES: optionalText
    .transform((v) => (v === undefined ? 1 : Number(v)))
    .pipe(
      z
        .number({ error: 'NIMBUS_DEMO_OPERATOR_CASES must be a whole number from 1 to 20' })
        .int('NIMBUS_DEMO_OPERATOR_CASES must be a whole number from 1 to 20')
        .min(1, 'NIMBUS_DEMO_OPERATOR_CASES must be a whole number from 1 to 20')
        .max(20, 'NIMBUS_DEMO_OPERATOR_CASES must be a whole number from 1 to 20'),
    ),
  NIMBUS_DEMO_SLOW_HANDOFF_SECONDS: optionalText
    .transform((v) => (v === undefined ? 90 : Number(v)))
    .pipe(
      z
        .number({ error: 'NIMBUS_DEMO_SLOW_HANDOFF_SECONDS must be a number of seconds (1-86400)' })
        .min(1, 'NIMBUS_DEMO_SLOW_HANDOFF_SECONDS must be a number of seconds (1-86400)')
        .max(86_400, 'NIMBUS_DEMO_SLOW_HANDOFF_SECONDS must be a number of seconds (1-86400)'),
    ),
  NIMBUS_LOG_LEVEL: optionalText.pipe(
    z
      .enum(['debug', 'info', 'warn', 'error'], {
        error: 'NIMBUS_LOG_LEVEL must be debug, info, warn or error',
      })
      .default('info'),
  ),
});

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
const isLoopback = (host: string) => LOOPBACK.has(host) || /^127\./.test(host);

export function parseStartConfig(env: NodeJS.ProcessEnv): ConfigResult {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const variable = issue?.path[0];
    // The messages already name the variable; zod's default ones ("Invalid input") do not, so add it.
    const text = issue?.message ?? 'malformed';
    return {
      ok: false,
      message: typeof variable === 'string' && !text.includes(variable) ? `${variable}: ${text}` : text,
    };
  }
  const e = parsed.data;
  const notes: string[] = [];

  let serviceBus: ServiceBusSetting;
  if (e.NIMBUS_SERVICEBUS_CONNECTION_STRING) {
    try {
      const info = parseConnectionString(e.NIMBUS_SERVICEBUS_CONNECTION_STRING);
      serviceBus = {
        kind: 'external',
        connectionString: e.NIMBUS_SERVICEBUS_CONNECTION_STRING,
        host: info.fullyQualifiedNamespace,
      };
    } catch (error) {
      // ConnectionStringError never contains the key.
      return { ok: false, message: `NIMBUS_SERVICEBUS_CONNECTION_STRING: ${(error as Error).message}` };
    }
  } else {
    serviceBus = {
      kind: 'embedded',
      port: e.NIMBUS_EMULATOR_PORT,
      dataDir: e.NIMBUS_DATA_DIR,
      ...(e.NIMBUS_EMULATOR_KEY ? { key: e.NIMBUS_EMULATOR_KEY } : {}),
      ...(e.NIMBUS_EMULATOR_TLS_PORT !== undefined ? { tlsPort: e.NIMBUS_EMULATOR_TLS_PORT } : {}),
    };
  }

  let cosmos: CosmosSetting;
  if (e.NIMBUS_COSMOS_ENDPOINT && e.NIMBUS_COSMOS_KEY) {
    cosmos = { kind: 'external', endpoint: e.NIMBUS_COSMOS_ENDPOINT, key: e.NIMBUS_COSMOS_KEY };
  } else if (e.NIMBUS_COSMOS_ENDPOINT || e.NIMBUS_COSMOS_KEY) {
    const missing = e.NIMBUS_COSMOS_ENDPOINT ? 'NIMBUS_COSMOS_KEY' : 'NIMBUS_COSMOS_ENDPOINT';
    return {
      ok: false,
      message: `${missing} is not set: set both NIMBUS_COSMOS_ENDPOINT and NIMBUS_COSMOS_KEY for a Cosmos DB account, or neither to use the embedded Cosmos server`,
    };
  } else {
    cosmos = { kind: 'embedded', port: e.NIMBUS_COSMOS_PORT, dataDir: e.NIMBUS_DATA_DIR };
  }

  const embedded = serviceBus.kind === 'embedded' && cosmos.kind === 'embedded';
  if (
    serviceBus.kind === 'embedded' &&
    cosmos.kind === 'embedded' &&
    e.NIMBUS_EMULATOR_PORT === e.NIMBUS_COSMOS_PORT &&
    e.NIMBUS_EMULATOR_PORT !== 0
  ) {
    return {
      ok: false,
      message: `NIMBUS_EMULATOR_PORT and NIMBUS_COSMOS_PORT are both ${e.NIMBUS_EMULATOR_PORT}: the two embedded servers need different ports`,
    };
  }
  if (serviceBus.kind === 'embedded' && serviceBus.tlsPort !== undefined && serviceBus.tlsPort !== 0) {
    const taken = (
      [
        ['NIMBUS_EMULATOR_PORT', serviceBus.port],
        ['NIMBUS_COSMOS_PORT', cosmos.kind === 'embedded' ? cosmos.port : undefined],
        ['PORT', e.PORT],
      ] as const
    ).find(([, value]) => value === serviceBus.tlsPort);
    if (taken)
      return {
        ok: false,
        message: `NIMBUS_EMULATOR_TLS_PORT and ${taken[0]} are both ${serviceBus.tlsPort}: the emulator's AMQPS listener needs a port of its own`,
      };
  }
  const auth: AuthMode = e.NIMBUS_AUTH ?? 'off';

  // Docker and some shells export HOSTNAME as the machine's name; only an address (or localhost) is a bind address.
  let hostname = '127.0.0.1';
  if (e.HOSTNAME) {
    if (isIP(e.HOSTNAME) !== 0 || e.HOSTNAME === 'localhost') hostname = e.HOSTNAME;
    else
      notes.push(
        `HOSTNAME=${e.HOSTNAME} is a machine name, not an address: the console listens on 127.0.0.1 (set HOSTNAME to an IP address to change it)`,
      );
  }
  if (auth === 'off' && !isLoopback(hostname)) {
    return {
      ok: false,
      message: `HOSTNAME=${hostname} would expose the console without sign-in (NIMBUS_AUTH=off): use a loopback address such as 127.0.0.1, or set NIMBUS_AUTH to entra or oidc`,
    };
  }
  for (const [name, value] of [
    ['NIMBUS_EMULATOR_PORT', e.NIMBUS_EMULATOR_PORT],
    ['NIMBUS_COSMOS_PORT', e.NIMBUS_COSMOS_PORT],
  ] as const) {
    if (
      value !== 0 &&
      value === e.PORT &&
      (name !== 'NIMBUS_COSMOS_PORT' || cosmos.kind === 'embedded') &&
      (name !== 'NIMBUS_EMULATOR_PORT' || serviceBus.kind === 'embedded')
    ) {
      return { ok: false, message: `PORT and ${name} are both ${value}: the console needs its own port` };
    }
  }

  return {
    ok: true,
    config: {
      serviceBus,
      cosmos,
      database: e.NIMBUS_COSMOS_DATABASE,
      catalogPath: e.NIMBUS_CATALOG,
      dataDir: e.NIMBUS_DATA_DIR,
      auth,
      console: {
        enabled: e.NIMBUS_CONSOLE ?? true,
        port: e.PORT,
        hostname,
        dev: e.NIMBUS_CONSOLE_DEV ?? false,
      },
      demo: {
        enabled: e.NIMBUS_DEMO ?? embedded,
        ratePerSecond: e.NIMBUS_DEMO_RATE,
        seed: e.NIMBUS_DEMO_SEED,
        operatorCases: e.NIMBUS_DEMO_OPERATOR_CASES,
        slowHandoffMs: Math.round(e.NIMBUS_DEMO_SLOW_HANDOFF_SECONDS * 1000),
      },
      logLevel: e.NIMBUS_LOG_LEVEL,
      notes,
    },
  };
}
