// Runs the built console in this process: Next.js's programmatic server behind a Node http server, with the
// settings the build recorded, as the standalone server runs it (serveWithBuiltConfig). Used by the `npm start`
// launcher, `npm run console` and the browser tests; a deployment runs the standalone server itself
// (`.next/standalone/server.js`, docs/deploy.md), for which `next build` makes the build. The console reads its connections
// from the environment (server/config.ts): the `env` given here is merged into process.env first, because the
// route handlers run in this same process and read it when they first need a connection.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConsoleConfig } from './config.ts';
import { isLoopbackHost } from './auth/config.ts';
import { refuseUnlessLoopback } from './auth/loopbackFront.ts';
import { closeContext } from './context.ts';
import { consoleDistDir, keepNextEnv } from './build.ts';
import { startTelemetry } from '../lib/telemetry/start.ts';
import { log } from './log.ts';
import { leaveSignalsToLauncher } from './shutdown.ts';

export interface StartConsoleOptions {
  /** 0 = ephemeral. Default: PORT or 3000. */
  port?: number;
  /** Default: HOSTNAME or 127.0.0.1. */
  hostname?: string;
  /** Variables to set before the console starts (NIMBUS_SERVICEBUS_CONNECTION_STRING, NIMBUS_COSMOS_*, …). */
  env?: Record<string, string | undefined>;
  /** Project root holding `.next` (default: this repository). */
  dir?: string;
  /**
   * Next's development server instead of the build: pages compile on first request and reload on every edit
   * (`npm run dev`). Slower per page and not for production; no build is needed.
   */
  dev?: boolean;
}

export interface RunningConsole {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** The repository root (this file lives in server/). */
export const CONSOLE_DIR = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');

type NextHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;
interface NextApp {
  prepare(): Promise<void>;
  getRequestHandler(): NextHandler;
  close?(): Promise<void>;
}
type CreateNext = (options: {
  dev: boolean;
  dir: string;
  hostname?: string;
  port?: number;
  quiet?: boolean;
}) => NextApp;

/** Where `next build` records the settings it built with (`required-server-files.json` in the build folder). */
type RequiredServerFiles = { config?: unknown };

/**
 * Hands Next the settings the build in `dir` was made with, the way the standalone server that `next build` writes
 * for `output: 'standalone'` (`<dist>/standalone/server.js`) does: through __NEXT_PRIVATE_STANDALONE_CONFIG, from
 * `<dist>/required-server-files.json`. Next then serves the build as that server does - next.config.ts is not
 * evaluated again at start, so the console runs with the configuration it was built with - and does not warn that
 * `next start` does not work with standalone output (it warns whenever a production server loads a standalone
 * build without this variable). The variable is set only while Next prepares (it reads its configuration then):
 * a `next build` or a development server started later in this process must read next.config.ts. Returns the
 * function that puts the variable back; a build of another output mode is served as before.
 */
function serveWithBuiltConfig(dir: string): () => void {
  const file = join(dir, consoleDistDir(), 'required-server-files.json');
  if (!existsSync(file)) return () => undefined;
  const { config } = JSON.parse(readFileSync(file, 'utf8')) as RequiredServerFiles;
  if (typeof config !== 'object' || config === null || (config as { output?: unknown }).output !== 'standalone')
    return () => undefined;
  const VARIABLE = '__NEXT_PRIVATE_STANDALONE_CONFIG';
  const before = process.env[VARIABLE];
  process.env[VARIABLE] = JSON.stringify(config);
  return () => {
    if (before === undefined) delete process.env[VARIABLE];
    else process.env[VARIABLE] = before;
  };
}

export async function startConsole(options: StartConsoleOptions = {}): Promise<RunningConsole> {
  const dir = options.dir ?? CONSOLE_DIR;
  for (const [k, v] of Object.entries(options.env ?? {})) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  // A relative catalog path means "relative to the project", whatever the launcher's working directory.
  const catalog = process.env.NIMBUS_CATALOG;
  if (catalog && !isAbsolute(catalog)) process.env.NIMBUS_CATALOG = join(dir, catalog);
  // Fail now, with the one clear message, rather than on the first page load.
  const config = loadConsoleConfig(process.env);
  const dev = options.dev === true;
  if (!dev && !existsSync(join(dir, consoleDistDir(), 'BUILD_ID')))
    throw new Error(
      `the console has not been built in ${dir} (run \`npm run build\`, or ensureConsoleBuilt from server/build.ts)`,
    );
  process.env.NEXT_TELEMETRY_DISABLED = '1';
  // OpenTelemetry export when OTEL_EXPORTER_OTLP_ENDPOINT is set (once per process: `npm start` may have started it).
  await startTelemetry('nimbus-console');

  const hostname = options.hostname ?? process.env.HOSTNAME ?? '127.0.0.1';
  const port = options.port ?? Number(process.env.PORT ?? 3000);
  // Without sign-in everybody who reaches the console may purge and replay: only this machine may reach it.
  if (config.auth === 'off' && !isLoopbackHost(hostname))
    throw new ConfigError(
      `the console would listen on ${hostname} without sign-in (NIMBUS_AUTH=off): use a loopback address such as 127.0.0.1, or set NIMBUS_AUTH to entra or oidc`,
    );
  // A computed specifier keeps Next's global type declarations out of the Node program's typecheck.
  const specifier = 'next';
  const mod = (await import(specifier)) as { default: CreateNext | { default: CreateNext } };
  const createNext = (typeof mod.default === 'function' ? mod.default : mod.default.default) as CreateNext;
  const restoreNextEnv = dev ? keepNextEnv(dir) : () => undefined;
  // Whoever called this stops the console (close() below; scripts/start.ts, scripts/console.ts): instrumentation.ts,
  // which runs while Next prepares, must leave this process's signal handlers alone.
  leaveSignalsToLauncher();
  const app = createNext({ dev, dir, hostname, port });
  const restoreConfigEnv = dev ? () => undefined : serveWithBuiltConfig(dir);
  try {
    await app.prepare();
  } finally {
    restoreConfigEnv();
  }
  restoreNextEnv();
  const handle = app.getRequestHandler();
  const signInOff = config.auth === 'off';
  const server: Server = createServer((req, res) => {
    // Loopback binding keeps other machines out, not web pages (DNS rebinding) nor local proxies: see hardening.ts.
    if (signInOff && refuseUnlessLoopback(req, res)) return;
    handle(req, res).catch(() => {
      if (!res.headersSent) res.statusCode = 500;
      res.end();
    });
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(port, hostname, () => {
      server.off('error', fail);
      ok();
    });
  });
  const actual = (server.address() as AddressInfo).port;
  // Bulk operations left unfinished by a previous run (a restart, a crash) resume without waiting for a request.
  void import('./operations/service.ts')
    .then((m) => m.startConsoleOperations())
    .catch((err: unknown) => log.warn({ err: err instanceof Error ? err.message : String(err) }, 'operations runner not started'));
  let closing: Promise<void> | undefined;
  const closeOnce = async () => {
    await new Promise<void>((ok) => {
      server.closeAllConnections();
      server.close(() => ok());
    });
    await app.close?.().catch(() => undefined);
    restoreNextEnv();
    await closeContext();
  };
  const host = hostname.includes(':') ? `[${hostname}]` : hostname;
  return {
    url: `http://${host}:${actual}`,
    port: actual,
    // Idempotent: a second close (a test's after-hook, a second Ctrl-C) waits for the first instead of closing
    // Next's app again, which never settles for the development server.
    close: () => (closing ??= closeOnce()),
  };
}
