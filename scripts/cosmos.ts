// `npm run cosmos -- [--port 8081] [--data-dir DIR]`: the embedded Cosmos server on its own, as `npm run emulator`
// is for Service Bus. Loopback only. With --data-dir every acknowledged write is kept there (journal + snapshot,
// docs/store.md) and is back on the next start; without it, memory only. Prints the endpoint and key to put in
// NIMBUS_COSMOS_ENDPOINT / NIMBUS_COSMOS_KEY and a `ready` line; stops cleanly on SIGINT/SIGTERM.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { startEmbeddedCosmos } from '../lib/store/cosmos.ts';

const usage = 'usage: npm run cosmos -- [--port 8081] [--host 127.0.0.1] [--data-dir DIR]';

const argsSchema = z.object({
  port: z.coerce.number().int().min(0).max(65535).default(8081),
  host: z.enum(['127.0.0.1', '::1', 'localhost']).default('127.0.0.1'),
  'data-dir': z.string().min(1).optional(),
});

function fail(message: string): never {
  console.error(`cosmos: ${message}\n${usage}`);
  process.exit(2);
}

let values: Record<string, unknown>;
try {
  values = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
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
  process.exit(0);
}
const parsed = argsSchema.safeParse(values);
if (!parsed.success) {
  const issue = parsed.error.issues[0];
  fail(issue ? `--${issue.path.join('.')}: ${issue.message}` : 'invalid arguments');
}
const args = parsed.data;
let cosmos;
try {
  cosmos = await startEmbeddedCosmos({
    port: args.port,
    host: args.host,
    ...(args['data-dir'] ? { dataDir: args['data-dir'] } : {}),
  });
} catch (err) {
  const code = (err as NodeJS.ErrnoException).code;
  fail(
    code === 'EADDRINUSE'
      ? `port ${args.port} is already in use`
      : err instanceof Error
        ? err.message
        : String(err),
  );
}
if (cosmos.recovery?.damaged)
  console.error(
    `cosmos: the journal ${cosmos.recovery.damaged.file} is damaged in the middle (line ${cosmos.recovery.damaged.line}, byte ${cosmos.recovery.damaged.offset}): ${cosmos.recovery.damaged.recordsAfter} records after it are not restored; the whole journal was copied to ${cosmos.recovery.damaged.kept} before it was cut`,
  );
else if (cosmos.recovery?.truncated)
  console.warn(`cosmos: the journal was damaged at its end: ${cosmos.recovery.truncated}`);
if (cosmos.recovery)
  console.log(
    `cosmos: ${cosmos.recovery.documents} documents restored from ${args['data-dir']} in ${cosmos.recovery.ms} ms`,
  );
console.log(`NIMBUS_COSMOS_ENDPOINT=${cosmos.endpoint}`);
// The embedded server checks no signature: this key is a fixed placeholder, not a secret.
console.log(`NIMBUS_COSMOS_KEY=${cosmos.key}`);
console.log(
  `cosmos ready on ${cosmos.endpoint}${args['data-dir'] ? ` (data in ${args['data-dir']})` : ' (memory only)'}`,
);

let stopping = false;
const stop = (signal: string): void => {
  if (stopping) return;
  stopping = true;
  console.log(`cosmos stopping (${signal})`);
  cosmos.close().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`cosmos: error while stopping: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
