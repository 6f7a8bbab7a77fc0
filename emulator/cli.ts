// `npm run emulator -- --port 5672 [--data-dir DIR] [--max-message-size BYTES] [--log-level LEVEL] [--key KEY]
//   [--allow-anonymous] [--tls-port 5671 [--cert CERT.pem --key-file KEY.pem]]`
// --tls-port adds an AMQPS listener (a certificate generated into the data dir unless --cert/--key-file).
// Starts the emulator in the foreground, prints its connection string (with the namespace key: a new random
// one each start unless --key names it) and a `ready` line, and stops cleanly on SIGINT/SIGTERM.

import { parseArgs } from 'node:util';
import { z } from 'zod';
import { startEmulator } from './index.ts';

const usage =
  'usage: npm run emulator -- [--port 5672] [--host 127.0.0.1] [--data-dir DIR] [--max-message-size BYTES] [--log-level info] [--key KEY] [--allow-anonymous] [--tls-port 5671 [--cert PEM --key-file PEM]]';

const argsSchema = z.object({
  port: z.coerce.number().int().min(0).max(65535).default(5672),
  host: z.enum(['127.0.0.1', '::1', 'localhost']).default('127.0.0.1'),
  'data-dir': z.string().min(1).optional(),
  'max-message-size': z.coerce
    .number()
    .int()
    .positive()
    .max(1024 * 1024)
    .optional(),
  'log-level': z.enum(['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
  key: z.string().min(1).optional(),
  'allow-anonymous': z.boolean().default(false),
  'tls-port': z.coerce.number().int().min(0).max(65535).optional(),
  cert: z.string().min(1).optional(),
  'key-file': z.string().min(1).optional(),
});

function fail(message: string): never {
  console.error(`emulator: ${message}\n${usage}`);
  process.exit(2);
}

async function main(): Promise<void> {
  let values: Record<string, unknown>;
  try {
    values = parseArgs({
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'data-dir': { type: 'string' },
        'max-message-size': { type: 'string' },
        'log-level': { type: 'string' },
        key: { type: 'string' },
        'allow-anonymous': { type: 'boolean' },
        'tls-port': { type: 'string' },
        cert: { type: 'string' },
        'key-file': { type: 'string' },
        help: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    fail(err instanceof Error ? err.message : String(err));
  }
  if (values.help) {
    console.log(usage);
    return;
  }
  const parsed = argsSchema.safeParse(values);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    fail(issue ? `--${issue.path.join('.')}: ${issue.message}` : 'invalid arguments');
  }
  const args = parsed.data;
  const emulator = await startEmulator({
    port: args.port,
    host: args.host,
    dataDir: args['data-dir'],
    maxMessageSizeBytes: args['max-message-size'],
    logLevel: args['log-level'],
    key: args.key,
    allowAnonymous: args['allow-anonymous'],
    tlsPort: args['tls-port'],
    tlsCert: args.cert,
    tlsKey: args['key-file'],
  });
  console.log(emulator.connectionString);
  if (emulator.tls) {
    console.log(
      `AMQPS on ${emulator.host}:${emulator.tls.port}, certificate ${emulator.tls.certPath} (SHA-256 ${emulator.tls.fingerprint})`,
    );
  }
  console.log(`emulator ready on ${emulator.host}:${emulator.port}`);

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    console.log(`emulator stopping (${signal})`);
    emulator.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(`emulator: error while stopping: ${err instanceof Error ? err.message : String(err)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err: unknown) => {
  console.error(`emulator: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
