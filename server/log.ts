// The console's structured logger. Never given connection strings, keys or message payloads; `redact` is the
// safety net for when someone does (a configuration object, request headers, a message with its body): fields
// with these names are replaced by "[redacted]" at the top level and up to four levels down (pino's redaction
// matches fixed paths, so each depth is listed; deeper secrets must not be logged in the first place).
import pino from 'pino';

/** Field names whose values are secrets or payloads wherever they appear in a log object. */
export const REDACTED_FIELDS = [
  // connection strings and keys (Service Bus, Cosmos, storage)
  'connectionString',
  'serviceBusConnectionString',
  'serviceBusConnection',
  'credential',
  'NIMBUS_SERVICEBUS_CONNECTION_STRING',
  'key',
  'NIMBUS_COSMOS_KEY',
  'masterKey',
  'accountKey',
  'sharedAccessKey',
  'SharedAccessKey',
  'sasToken',
  // sign-in secrets and tokens
  'secret',
  'clientSecret',
  'NIMBUS_AUTH_CLIENT_SECRET',
  'NIMBUS_AUTH_SESSION_SECRET',
  'password',
  'token',
  'accessToken',
  'idToken',
  'refreshToken',
  'verifier',
  'codeVerifier',
  'authorization',
  'Authorization',
  'cookie',
  'Cookie',
  'set-cookie',
  'Set-Cookie',
  // message contents
  'payload',
  'body',
] as const;

const DEPTHS = ['', '*.', '*.*.', '*.*.*.', '*.*.*.*.'];
/** Names that are not plain identifiers need bracket syntax in a redact path. */
const field = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : `["${name}"]`);
/** `key`, `*.key`, … and `["set-cookie"]`, `*["set-cookie"]`, … */
export const REDACT_PATHS = DEPTHS.flatMap((prefix) => REDACTED_FIELDS.map((name) => `${prefix}${field(name)}`.replace(/\.\[/g, '[')));

export function createLogger(options: { name: string; level?: string; destination?: pino.DestinationStream }): pino.Logger {
  const settings: pino.LoggerOptions = {
    name: options.name,
    level: options.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  return options.destination ? pino(settings, options.destination) : pino(settings);
}

/** Takes one pino JSON record (a line) of the console's log. */
export type LogSink = (record: string) => void;

// One sink per process, on globalThis: Next.js bundles its own copies of this module (route chunks, the
// instrumentation hook), and every copy must write where the launcher asked, not only the one it imported.
const SINK = Symbol.for('nimbus.console.logSink');
const slot = globalThis as Record<symbol, LogSink | undefined>;

/**
 * Sends the console's log records to `sink` instead of stdout (undefined: stdout again). `npm start` runs the
 * console in its own process and prints them as `[console]` lines like the other parts (scripts/start.ts).
 */
export function setConsoleLogSink(sink: LogSink | undefined): void {
  slot[SINK] = sink;
}

/** stdout, or the sink the launcher set, looked up on each record: the sink may be set after this module loaded. */
const consoleDestination: pino.DestinationStream = {
  write: (record) => {
    const sink = slot[SINK];
    if (sink) sink(record);
    else process.stdout.write(record);
  },
};

export const log = createLogger({
  name: 'console',
  // Quiet under Node's test runner (it sets NODE_TEST_CONTEXT in test processes) unless asked otherwise.
  level: process.env.NIMBUS_LOG_LEVEL ?? (process.env.NODE_TEST_CONTEXT ? 'silent' : 'info'),
  destination: consoleDestination,
});
