// `npm start`: the whole platform on one machine. With no connection settings it starts, in order, the Service
// Bus emulator, the embedded Cosmos server, the provisioner (catalog), the resolver worker, the demo endpoints
// with traffic, and the console (built first if needed); with NIMBUS_SERVICEBUS_CONNECTION_STRING and
// NIMBUS_COSMOS_ENDPOINT/KEY it uses those instead. Ctrl-C stops everything in reverse order. A wrong setting
// is one sentence on stderr and exit code 2; a part that cannot start is one sentence and exit code 1.
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { format } from 'node:util';
import { parseStartConfig, type StartConfig } from './start-config.ts';
import { componentLogger, recordPrinter, type Component } from './start-log.ts';
import { StartError, startStack, type RunningStack } from './start-stack.ts';
import { startTelemetry } from '../lib/telemetry/start.ts';
import { setConsoleLogSink } from '../server/log.ts';

function fail(message: string, exitCode: number): never {
  process.stderr.write(`npm start: ${message}\n`);
  process.exit(exitCode);
}

/** Tries the address we are about to listen on; undefined when it is free, else the error code. */
function probeListen(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'unknown error'));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(undefined)));
  });
}

/** Fails fast, before anything starts, when an address we are about to listen on is not usable. */
async function checkPorts(config: StartConfig): Promise<string | undefined> {
  const wanted: Array<[string, string, number]> = [];
  if (config.serviceBus.kind === 'embedded')
    wanted.push(['NIMBUS_EMULATOR_PORT', '127.0.0.1', config.serviceBus.port]);
  if (config.cosmos.kind === 'embedded') wanted.push(['NIMBUS_COSMOS_PORT', '127.0.0.1', config.cosmos.port]);
  if (config.console.enabled) wanted.push(['PORT', config.console.hostname, config.console.port]);
  for (const [variable, host, port] of wanted) {
    const code = await probeListen(host, port);
    if (code === undefined) continue;
    if (code === 'EADDRINUSE')
      return `${variable}: ${host}:${port} is already in use (another \`npm start\`?); stop what listens there or set ${variable} to a free port`;
    if (code === 'EACCES')
      return `${variable}: listening on port ${port} needs privileges (ports below 1024); choose a port above 1023`;
    if (code === 'EADDRNOTAVAIL') return `HOSTNAME: ${host} is not an address of this machine`;
    return `${variable}: cannot listen on ${host}:${port} (${code})`;
  }
  return undefined;
}

// `npm start -- --reset` (or NIMBUS_RESET=1): the embedded servers' data is deleted before they start.
const wantsReset = process.argv.includes('--reset') || process.env.NIMBUS_RESET === '1';
// `npm run dev` is `npm start` with the console under Next's development server.
if (process.argv.includes('--dev')) process.env.NIMBUS_CONSOLE_DEV = '1';
const parsed = parseStartConfig(process.env);
if (!parsed.ok) fail(parsed.message, 2);
const config = parsed.config;
const portProblem = await checkPorts(config);
if (portProblem) fail(portProblem, 2);
// OpenTelemetry export when OTEL_EXPORTER_OTLP_ENDPOINT is set (all parts run in this process: one service).
const telemetry = await startTelemetry('nimbus');

const loggers = new Map<Component, ReturnType<typeof componentLogger>>();
const logger = (component: Component) => {
  let l = loggers.get(component);
  if (!l) loggers.set(component, (l = componentLogger(component, config.logLevel)));
  return l;
};
const log = logger('start');

// Next.js, running in this process, prints through console.*: give its lines the console's prefix too.
const consoleLog = logger('console');
console.log = console.info = (...args: unknown[]) => consoleLog.info(format(...args));
console.warn = (...args: unknown[]) => consoleLog.warn(format(...args));
console.error = (...args: unknown[]) => consoleLog.error(format(...args));
// The console's own log (server/log.ts: its background duties, the Manager's commands) writes pino JSON to stdout
// unless told otherwise; here its records get the same prefixed lines.
setConsoleLogSink(recordPrinter('console'));
// Process warnings (e.g. a library's listener-count warning) once each, as log lines rather than bare stderr.
const warned = new Set<string>();
process.removeAllListeners('warning');
process.on('warning', (warning) => {
  if (warned.has(warning.message)) return;
  warned.add(warning.message);
  log.warn({ warning: warning.name }, warning.message);
});
for (const note of config.notes) log.warn({}, note);
log.info(
  {
    serviceBus: config.serviceBus.kind,
    cosmos: config.cosmos.kind,
    catalog: config.catalogPath,
    demo: config.demo.enabled ? `${config.demo.ratePerSecond}/s seed ${config.demo.seed}` : 'off',
  },
  'starting the NimBus platform',
);

if (config.serviceBus.kind === 'embedded' || config.cosmos.kind === 'embedded') {
  const kept = [
    config.serviceBus.kind === 'embedded' ? `${config.dataDir}/servicebus` : undefined,
    config.cosmos.kind === 'embedded' ? `${config.dataDir}/cosmos` : undefined,
  ].filter((d): d is string => d !== undefined);
  if (wantsReset) {
    for (const dir of kept) rmSync(dir, { recursive: true, force: true });
    log.info({}, `reset: removed ${kept.join(' and ')}; starting from a clean slate`);
  }
  log.info(
    {},
    `the embedded platform keeps its messages, events, history and audits in ${kept.join(' and ')} across restarts ` +
      `(\`npm start -- --reset\` or NIMBUS_RESET=1 starts from a clean slate)`,
  );
}

const abort = new AbortController();
let stack: RunningStack | undefined;
let stopping = false;
let firstSignalAt = 0;
const onSignal = (signal: NodeJS.Signals) => {
  if (stopping) {
    // Ctrl-C reaches this process twice (from the terminal, and relayed by npm/tsx): only a later one means "now".
    if (Date.now() - firstSignalAt < 2000) return;
    log.warn({}, 'second interrupt: exiting without waiting');
    process.exit(130);
  }
  stopping = true;
  firstSignalAt = Date.now();
  log.info({ signal }, 'stopping (Ctrl-C again to exit at once)');
  abort.abort();
  if (!stack) return; // still starting: startStack stops what it started and rejects
  stack.stop().then(
    async () => {
      await telemetry.shutdown();
      log.info({}, 'stopped');
      process.exit(0);
    },
    (error: unknown) => {
      log.error({ err: (error as Error).message }, 'stopping failed');
      process.exit(1);
    },
  );
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
// A stray rejection in some part must not take the platform down without a word; log it once per message.
process.on('unhandledRejection', (reason) =>
  log.error({ err: reason instanceof Error ? reason.message : String(reason) }, 'unhandled rejection'),
);

try {
  stack = await startStack({ config, logger, console: config.console.enabled, signal: abort.signal });
} catch (error) {
  if (stopping) {
    log.info({}, 'stopped');
    process.exit(0);
  }
  if (error instanceof StartError) fail(`[${error.component}] ${error.message}`, 1);
  fail(`unexpected failure while starting: ${(error as Error).message}`, 1);
}
if (stopping) {
  // The interrupt came while the last part was starting.
  await stack.stop();
  log.info({}, 'stopped');
  process.exit(0);
}
log.info(
  { console: stack.consoleUrl ?? 'not running', demo: stack.started.demo },
  stack.consoleUrl
    ? `NimBus is running: open ${stack.consoleUrl} (Ctrl-C stops everything)`
    : 'NimBus is running (Ctrl-C stops everything)',
);
