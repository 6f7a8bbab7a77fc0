// `npm run console`: the console alone, as one replica of a deployment - the production build served by Next's
// server (server/console.ts), with the heartbeat scheduler started by instrumentation.ts. It reads the same
// variables as `npm start`'s console: NIMBUS_SERVICEBUS_CONNECTION_STRING, NIMBUS_COSMOS_ENDPOINT/KEY/DATABASE,
// NIMBUS_CATALOG, NIMBUS_AUTH (and the sign-in settings), PORT (default 3000), HOSTNAME (default 127.0.0.1).
// Builds the console first when there is no build or the sources changed. Any number of these may run against
// one store and one namespace (docs/deploy.md). A wrong setting: one sentence, exit 2; SIGINT/SIGTERM stop it.
import { isIP } from 'node:net';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConsoleConfig } from '../server/config.ts';
import { ensureConsoleBuilt } from '../server/build.ts';
import { startConsole } from '../server/console.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

function fail(message: string, code: number): never {
  process.stderr.write(`console: ${message}\n`);
  process.exit(code);
}

try {
  loadConsoleConfig(process.env);
} catch (err) {
  if (err instanceof ConfigError) fail(err.message, 2);
  throw err;
}
const port = Number(process.env.PORT ?? 3000);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail('PORT must be a port number (0-65535)', 2);

try {
  if (await ensureConsoleBuilt(root, { onOutput: (line) => process.stdout.write(`[build] ${line}\n`) }))
    console.log('console: built');
} catch (err) {
  fail(`the console could not be built: ${(err as Error).message.split('\n')[0]}`, 1);
}

// Docker and some shells export HOSTNAME as the machine's name: only an address (or localhost) is a bind address.
const host = process.env.HOSTNAME?.trim();
const hostname = host && (isIP(host) !== 0 || host === 'localhost') ? host : '127.0.0.1';

let running;
try {
  running = await startConsole({ dir: root, port, hostname });
} catch (err) {
  if (err instanceof ConfigError) fail(err.message, 2);
  if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') fail(`port ${port} is already in use; set PORT to a free port`, 2);
  fail(`the console did not start: ${(err as Error).message}`, 1);
}
// The line the tests (and a human) wait for.
console.log(`console ready on ${running.url}`);

let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`console stopping (${signal})`);
  void (async () => {
    const { stopBackgroundDuties } = await import('../server/background.ts');
    await stopBackgroundDuties().catch(() => undefined);
    await running.close();
    process.exit(0);
  })().catch(() => process.exit(1));
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
