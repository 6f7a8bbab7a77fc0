// The whole platform as one object: starts the parts in order (Service Bus emulator, embedded Cosmos server,
// provisioning from the catalog, resolver worker, demo endpoints, console) and stops them in reverse. Used by
// scripts/start.ts (`npm start`) and, in-process with ephemeral ports, by the tests. A part that fails to start
// stops everything started before it and raises a StartError that says which part and why, in one sentence.
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { startEmulator } from '../emulator/index.ts';
import { CatalogError, loadCatalog } from '@nimbus/sdk/catalog';
import type { Catalog } from '@nimbus/sdk/contract';
import { createServiceBusClients, type ServiceBusClients } from '@nimbus/sdk/servicebus';
import { createStore, startEmbeddedCosmos, type MessageStore } from '../lib/store/index.ts';
import {
  changeCount,
  deriveTopology,
  provisionTopology,
  type ProvisionOptions,
} from '@nimbus/sdk/topology';
import { startDemo, type DemoTimings, type RunningDemo } from '../demo/index.ts';
import { buildConsole, consoleBuildIsStale, consoleDistDir } from '../server/build.ts';
import { startResolver, type ResolverOptions } from '../resolver-worker/index.ts';
import type { StartConfig } from './start-config.ts';
import { closeStoreRecordingOwed, recoverOwedCounters } from './countersOwed.ts';
import { emulatorLogger, prefix, type Component } from './start-log.ts';
// Types only: the console module itself is imported when the console starts, so that the rest of the stack (and
// its tests) does not depend on the console's server code loading.
import type { RunningConsole, StartConsoleOptions } from '../server/console.ts';
import type { HeartbeatScheduler, HeartbeatSchedulerOptions } from '../server/heartbeat/scheduler.ts';
import type { PlatformDocs } from '../server/heartbeat/platformDocs.ts';
import type { ServiceBusClient } from '@azure/service-bus';

export class StartError extends Error {
  override readonly name = 'StartError';
  constructor(
    readonly component: Component,
    message: string,
  ) {
    super(message);
  }
}

export interface StackOptions {
  config: Pick<
    StartConfig,
    'serviceBus' | 'cosmos' | 'database' | 'catalogPath' | 'auth' | 'console' | 'demo'
  >;
  logger: (component: Component) => Logger;
  /** The repository root (where .next/ and server/ are). Default: this repository. */
  root?: string;
  /** Start the console (needs server/console.ts). Default true; start.ts passes NIMBUS_CONSOLE. */
  console?: boolean;
  /** Subscription settings for provisioning (tests use a short lock). */
  subscriptionDefaults?: ProvisionOptions['subscriptionDefaults'];
  demoTimings?: Partial<DemoTimings>;
  /** Options passed to the resolver worker besides the connection string and store (tests: short timings). */
  resolverOptions?: Omit<Partial<ResolverOptions>, 'store' | 'serviceBusConnectionString' | 'client'>;
  /** Aborts a start in progress (Ctrl-C during `next build`): the build is killed and what started is stopped. */
  signal?: AbortSignal;
}

export interface RunningStack {
  serviceBusConnectionString: string;
  cosmos: { endpoint: string; key: string };
  catalog: Catalog;
  /** The store the resolver writes (tests read it). */
  store: MessageStore;
  /** Which optional parts are running. */
  started: { demo: boolean; console: boolean };
  consoleUrl?: string;
  stop(): Promise<void>;
}

interface Stoppable {
  component: Component;
  stop(): Promise<void>;
}

const REPOSITORY_ROOT = fileURLToPath(new URL('..', import.meta.url));

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));
const isAddressInUse = (error: unknown) =>
  (error as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE';

/** Imports one of our modules by path when it exists (parts built by others may not be there yet). */
async function importIfPresent<T>(root: string, relativePath: string): Promise<T | undefined> {
  const file = resolve(root, relativePath);
  if (!existsSync(file)) return undefined;
  return (await import(pathToFileURL(file).href)) as T;
}

export async function startStack(options: StackOptions): Promise<RunningStack> {
  const { config } = options;
  const root = options.root ?? REPOSITORY_ROOT;
  // Ctrl-C while starting: stop between parts instead of starting the rest first.
  const checkInterrupted = () => {
    if (options.signal?.aborted) throw new StartError('start', 'interrupted while starting');
  };
  const log = options.logger;
  const started: Stoppable[] = [];
  const stopAll = async () => {
    for (const part of started.reverse()) {
      try {
        await part.stop();
      } catch (error) {
        log(part.component).warn({ err: errorText(error) }, 'did not stop cleanly');
      }
    }
    started.length = 0;
  };

  try {
    // The catalog first: a wrong path or file should fail before anything listens.
    let catalog: Catalog;
    try {
      catalog = await loadCatalog(config.catalogPath);
    } catch (error) {
      if (error instanceof CatalogError)
        throw new StartError('provision', `NIMBUS_CATALOG: ${error.message}`);
      throw error;
    }

    // 0. The console's build, before anything else starts: a build takes minutes on a small machine, and the
    // demo traffic would otherwise pile up (and hold the CPU the build needs) while nobody can look at it.
    // The development server (`npm run dev`) compiles pages on demand instead.
    if (options.console !== false && !config.console.dev && existsSync(resolve(root, 'server/console.ts')))
      await prepareConsoleBuild(root, log('console'), options.signal);

    checkInterrupted();
    // 1. Service Bus: the embedded emulator, or the namespace from the connection string.
    let connectionString: string;
    // The port the emulator's AMQPS listener got, when it has one: the console refuses it as an alert target.
    let emulatorTlsPort: number | undefined;
    if (config.serviceBus.kind === 'embedded') {
      const dataDir =
        config.serviceBus.dataDir === undefined ? undefined : join(config.serviceBus.dataDir, 'servicebus');
      if (dataDir) mkdirSync(dataDir, { recursive: true });
      let emulator;
      try {
        emulator = await startEmulator({
          port: config.serviceBus.port,
          dataDir,
          // Its own records (e.g. a journal damaged at start-up) go to the start log; without this it logs nothing.
          logger: emulatorLogger(log('emulator')),
          ...(config.serviceBus.key !== undefined ? { key: config.serviceBus.key } : {}),
          ...(config.serviceBus.tlsPort !== undefined ? { tlsPort: config.serviceBus.tlsPort } : {}),
        });
      } catch (error) {
        if (isAddressInUse(error)) {
          throw new StartError(
            'emulator',
            `NIMBUS_EMULATOR_PORT: 127.0.0.1:${config.serviceBus.port} is already in use (another \`npm start\` or emulator?); stop it or choose another port`,
          );
        }
        throw new StartError('emulator', `the Service Bus emulator did not start: ${errorText(error)}`);
      }
      started.push({ component: 'emulator', stop: () => emulator.close() });
      connectionString = emulator.connectionString;
      emulatorTlsPort = emulator.tls?.port;
      log('emulator').info(
        { address: `127.0.0.1:${emulator.port}`, data: dataDir ?? 'memory only' },
        config.serviceBus.key !== undefined
          ? 'Service Bus emulator ready (namespace key from NIMBUS_EMULATOR_KEY)'
          : 'Service Bus emulator ready (a random namespace key; set NIMBUS_EMULATOR_KEY to connect other tools)',
      );
    } else {
      connectionString = config.serviceBus.connectionString;
      log('emulator').info(
        { namespace: config.serviceBus.host },
        'using the Service Bus namespace from NIMBUS_SERVICEBUS_CONNECTION_STRING (no emulator)',
      );
    }

    checkInterrupted();
    // 2. Cosmos: the embedded server (its data in <data dir>/cosmos, back after a restart), or the account from the
    // settings.
    let cosmos: { endpoint: string; key: string };
    /** Set when the embedded store was restored from a journal a crash left (no clean stop compacted it). */
    let uncleanStop = false;
    if (config.cosmos.kind === 'embedded') {
      let server;
      try {
        server = await startEmbeddedCosmos({
          port: config.cosmos.port,
          ...(config.cosmos.dataDir !== undefined ? { dataDir: join(config.cosmos.dataDir, 'cosmos') } : {}),
        });
      } catch (error) {
        if (isAddressInUse(error)) {
          throw new StartError(
            'cosmos',
            `NIMBUS_COSMOS_PORT: 127.0.0.1:${config.cosmos.port} is already in use; stop what listens there or choose another port`,
          );
        }
        throw new StartError('cosmos', `the embedded Cosmos server did not start: ${errorText(error)}`);
      }
      started.push({ component: 'cosmos', stop: () => server.close() });
      cosmos = { endpoint: server.endpoint, key: server.key };
      const recovery = server.recovery;
      // Replayed journal records, or a cut one (even with no whole record before it): not a clean stop.
      uncleanStop = recovery?.unclean ?? false;
      if (recovery?.damaged)
        // Not a torn last write: acknowledged records after the damage were not restored; the copy holds them.
        log('cosmos').error(
          { ...recovery.damaged },
          `the store's journal is damaged in the middle: ${recovery.damaged.recordsAfter} records after the damage are not restored; the whole journal was copied to ${recovery.damaged.kept} before it was cut`,
        );
      else if (recovery?.truncated)
        log('cosmos').warn(
          {},
          `the store's journal ended in a damaged record (a crash mid-write?), cut off: ${recovery.truncated}`,
        );
      log('cosmos').info(
        recovery
          ? { endpoint: server.endpoint, documents: recovery.documents, restoredInMs: recovery.ms }
          : { endpoint: server.endpoint },
        recovery
          ? `embedded Cosmos server ready: ${recovery.documents} documents restored from ${join(config.cosmos.dataDir!, 'cosmos')}`
          : 'embedded Cosmos server ready (in memory: events, history and audits are lost when it stops)',
      );
    } else {
      cosmos = { endpoint: config.cosmos.endpoint, key: config.cosmos.key };
      log('cosmos').info(
        { endpoint: new URL(config.cosmos.endpoint).host },
        'using the Cosmos DB account from NIMBUS_COSMOS_ENDPOINT (no embedded server)',
      );
    }
    let store: MessageStore;
    try {
      // The Resolver's setting: counter deltas buffered off its hot path (docs/store.md).
      store = await createStore({
        endpoint: cosmos.endpoint,
        key: cosmos.key,
        database: config.database,
        counterFlushMs: 250,
        throttleRetries: 0,
        // What the store has no caller to report to (a settle pass that could not recount): in the stack's log.
        warn: (fields, message) => log('cosmos').warn(fields, message),
      });
    } catch (error) {
      throw new StartError(
        'cosmos',
        `the store could not open database '${config.database}': ${errorText(error)}`,
      );
    }
    // Where a stop that could not apply every counter delta says so, for the next start to recover them (the stack
    // has no surviving Resolver to do it): beside the embedded server's data. In memory only, the rows go too; with
    // an account of one's own the stop logs that a recount is owed (scripts/countersOwed.ts).
    const owedDir = config.cosmos.kind === 'embedded' ? config.cosmos.dataDir : undefined;
    started.push({
      component: 'cosmos',
      stop: async () => {
        await closeStoreRecordingOwed(store, owedDir, log('cosmos'));
      },
    });
    try {
      await recoverOwedCounters(store, owedDir, log('cosmos'));
    } catch (error) {
      // The file is kept: the next start tries again (the store throttling or gone now), or says what to do with it.
      throw new StartError('cosmos', `the counter deltas owed by the last stop could not be recovered: ${errorText(error)}`);
    }
    if (uncleanStop) {
      // Counter deltas are buffered for 250 ms (and a crash can fall between a row write and its counter patch):
      // after a crash the rows are the truth, so the counters are recounted from them before anything writes.
      for (const endpoint of catalog.endpoints) await store.recountEndpoint(endpoint.id);
      log('cosmos').info(
        { endpoints: catalog.endpoints.length },
        'the last stop was not clean: counters recounted from the status rows',
      );
    }

    checkInterrupted();
    // 3. Provisioning: the topology from the catalog (idempotent).
    let clients: ServiceBusClients;
    try {
      clients = createServiceBusClients(connectionString);
    } catch (error) {
      throw new StartError('provision', `NIMBUS_SERVICEBUS_CONNECTION_STRING: ${errorText(error)}`);
    }
    started.push({ component: 'provision', stop: () => clients.close() });
    try {
      const model = deriveTopology(catalog);
      const report = await provisionTopology(clients.admin, model, {
        subscriptionDefaults: options.subscriptionDefaults,
      });
      log('provision').info(
        {
          catalog: config.catalogPath,
          topics: model.topics.length,
          created: report.created.length,
          changed: report.changed.length,
          removed: report.removed.length,
        },
        changeCount(report) === 0 ? 'topology already up to date' : 'topology provisioned',
      );
    } catch (error) {
      throw new StartError(
        'provision',
        `provisioning the topology from ${config.catalogPath} failed: ${errorText(error)}`,
      );
    }

    checkInterrupted();
    // 4. The resolver worker: records every outcome in the store.
    try {
      const resolver = startResolver({
        serviceBusConnectionString: connectionString,
        store,
        log: log('resolver'),
        ...options.resolverOptions,
      });
      started.push({ component: 'resolver', stop: () => resolver.stop() });
    } catch (error) {
      throw new StartError('resolver', `the resolver worker did not start: ${errorText(error)}`);
    }

    checkInterrupted();
    // 5. The demo endpoints and their traffic.
    let demoStarted = false;
    let runningDemo: RunningDemo | undefined;
    const ledgerViaAgentApi = options.console !== false && config.auth === 'off';
    if (config.demo.enabled) {
      try {
        const demo = await startDemo({
          client: clients.client,
          catalog,
          seed: config.demo.seed,
          ratePerSecond: config.demo.ratePerSecond,
          operatorCases: config.demo.operatorCases,
          logger: log('demo'),
          timings: { slowHandoffMs: config.demo.slowHandoffMs, ...options.demoTimings },
          // With the console and sign-in off, the ledger agent runs on the Agent API (loopback, no token, no bus
          // credentials); it connects once the console is up (step 6). Otherwise it reports over the bus.
          ledger: ledgerViaAgentApi ? 'agentApi' : 'bus',
        });
        runningDemo = demo;
        started.push({ component: 'demo', stop: () => demo.stop() });
        demoStarted = true;
      } catch (error) {
        // The platform is useful without the demo (e.g. with a catalog of one's own): warn and go on.
        log('demo').warn({ err: errorText(error) }, 'demo endpoints not started');
      }
    } else {
      log('demo').info({}, 'demo endpoints off (NIMBUS_DEMO=0)');
    }
    if (demoStarted) {
      try {
        if (await startDemoHeartbeats(store, { catalog, root, cosmos, database: config.database }))
          log('demo').info(
            DEMO_HEARTBEAT,
            'heartbeat probes on for the demo (every 30 s): Admin -> Health, Endpoints and Monitor show live heartbeats',
          );
      } catch (error) {
        log('demo').warn({ err: errorText(error) }, 'heartbeat probes not switched on for the demo');
      }
    }

    checkInterrupted();
    // 6. The console.
    let consoleUrl: string | undefined;
    if (options.console !== false) {
      consoleUrl = await startConsolePart(
        options,
        root,
        { connectionString, emulatorTlsPort, cosmos, log: log('console') },
        started,
      );
      if (consoleUrl && runningDemo && ledgerViaAgentApi) runningDemo.connectLedgerAgent({ consoleUrl });
      else if (runningDemo && ledgerViaAgentApi) log('demo').warn({}, 'the console did not start: the ledger agent (Agent API) does not run');
      if (consoleUrl) {
        await startHeartbeatPart(
          root,
          { store, client: clients.client, catalog, cosmos, database: config.database, log: log('console') },
          started,
        );
        await startBackgroundPart(root, consoleUrl, log('console'), started);
      }
    } else {
      log('console').info({}, 'console off (NIMBUS_CONSOLE=0)');
    }

    return {
      serviceBusConnectionString: connectionString,
      cosmos,
      catalog,
      store,
      started: { demo: demoStarted, console: consoleUrl !== undefined },
      consoleUrl,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

type ConsoleModule = { startConsole?: (o: StartConsoleOptions) => Promise<RunningConsole> };

async function startConsolePart(
  options: StackOptions,
  root: string,
  parts: {
    connectionString: string;
    emulatorTlsPort: number | undefined;
    cosmos: { endpoint: string; key: string };
    log: Logger;
  },
  started: Stoppable[],
): Promise<string | undefined> {
  const { config } = options;
  const { log } = parts;
  if (!existsSync(resolve(root, 'server/console.ts'))) {
    log.warn({}, 'console not available yet (server/console.ts is missing)');
    return undefined;
  }
  let module: ConsoleModule | undefined;
  try {
    module = await importIfPresent<ConsoleModule>(root, 'server/console.ts');
  } catch (error) {
    throw new StartError('console', `the console's server code did not load: ${errorText(error)}`);
  }
  if (!module?.startConsole) {
    log.warn({}, 'console not available yet (server/console.ts has no startConsole)');
    return undefined;
  }
  // The console reads its settings from the environment of this process; hand it the resolved ones (the
  // emulator's connection string, the embedded Cosmos endpoint), not what the user left unset.
  const env: Record<string, string> = {
    NIMBUS_SERVICEBUS_CONNECTION_STRING: parts.connectionString,
    NIMBUS_COSMOS_ENDPOINT: parts.cosmos.endpoint,
    NIMBUS_COSMOS_KEY: parts.cosmos.key,
    NIMBUS_COSMOS_DATABASE: config.database,
    NIMBUS_CATALOG: resolve(config.catalogPath),
    NIMBUS_AUTH: config.auth,
    // The ports the emulator listens on are never an alert target (server/alerts/channelTarget.ts): the plain one is
    // the connection string's; the AMQPS one, when there is one, is this (the real one, also when 0 was asked).
    ...(parts.emulatorTlsPort !== undefined ? { NIMBUS_EMULATOR_TLS_PORT: String(parts.emulatorTlsPort) } : {}),
  };
  try {
    const running = await module.startConsole({
      port: config.console.port,
      hostname: config.console.hostname,
      env,
      dir: root,
      dev: config.console.dev,
    });
    started.push({ component: 'console', stop: () => running.close() });
    log.info({ url: running.url }, `console ready: open ${running.url}`);
    return running.url;
  } catch (error) {
    if (isAddressInUse(error)) {
      throw new StartError(
        'console',
        `PORT: ${config.console.hostname}:${config.console.port} is already in use; stop what listens there or set PORT to a free port`,
      );
    }
    throw new StartError('console', `the console did not start: ${errorText(error)}`);
  }
}

/**
 * Builds the console when there is no build, or when a source file is newer than the build: a pulled or edited
 * checkout must not be served from yesterday's build. The build's output goes out under the [console] prefix.
 */
async function prepareConsoleBuild(
  root: string,
  log: Logger,
  signal: AbortSignal | undefined,
): Promise<void> {
  if (!consoleBuildIsStale(root)) return;
  log.info(
    {},
    existsSync(resolve(root, consoleDistDir(), 'BUILD_ID'))
      ? 'console sources changed since the last build: running `next build` again'
      : 'the console has not been built yet: running `next build` (once; takes a minute or two)',
  );
  const color = process.stdout.isTTY === true;
  try {
    await buildConsole(root, {
      signal,
      onOutput: (line) => process.stdout.write(`${prefix('console', color)} ${line}\n`),
    });
  } catch (error) {
    // The build's own output is already above: its first line is enough here.
    throw new StartError('console', errorText(error).split('\n')[0]!);
  }
  log.info({}, 'console built');
}

/** The demo's heartbeat schedule: the shortest the scheduler allows (server/heartbeat/scheduler.ts clampSettings). */
export const DEMO_HEARTBEAT = { enabled: true, intervalSeconds: 30, timeoutSeconds: 10 } as const;

/**
 * Turns the endpoint probes on for the demo, so its endpoints show a live heartbeat within a minute instead of
 * "Unknown" (the schedule starts off everywhere else: probing is an operator's decision in production). Only when
 * the settings were never saved: an operator's own choice, made in Admin -> Health, stays as it is across restarts.
 */
export async function startDemoHeartbeats(
  store: MessageStore,
  optOut?: { catalog: Catalog; root: string; cosmos: { endpoint: string; key: string }; database: string },
): Promise<boolean> {
  const { etag } = await store.getHeartbeatSettings();
  if (etag !== undefined) return false;
  if (optOut) {
    // An endpoint that consumes nothing (the storefront) runs no receiver and could only ever show Off - and
    // Monitor bands an endpoint whose heartbeat is Off as Failing. It starts on the opt-out list instead.
    const silent = optOut.catalog.endpoints.filter((e) => e.consumes.length === 0).map((e) => e.id);
    const docsModule = await importIfPresent<PlatformDocsModule>(optOut.root, 'server/heartbeat/platformDocs.ts');
    if (silent.length > 0 && docsModule?.PlatformDocs) {
      const docs = new docsModule.PlatformDocs({ ...optOut.cosmos, database: optOut.database });
      try {
        // Create-if-absent: an operator's own list is kept.
        await docs.write('heartbeat_excluded', { endpoints: silent.sort() }, null);
      } finally {
        docs.close();
      }
    }
  }
  await store.saveHeartbeatSettings(DEMO_HEARTBEAT);
  return true;
}

type BackgroundModule = {
  backgroundStartedBy?: () => string | undefined;
  claimBackground?: (by: string, stop: () => Promise<void>) => boolean;
  stopBackgroundDuties?: () => Promise<void>;
};

type HistoryBackgroundModule = {
  startConsoleBackground?: (env: Record<string, string | undefined>) => Promise<{ stop(): Promise<void> }>;
};

/**
 * The console's history and alert duties (server/history/background.ts): the per-minute backlog sample and
 * retention, and the alert evaluator, each under a lease so replicas share them. Links in notices point at this
 * console unless NIMBUS_CONSOLE_URL names its public address.
 */
async function startBackgroundPart(root: string, consoleUrl: string, log: Logger, started: Stoppable[]): Promise<void> {
  // Started with the other duties by the console's instrumentation hook (production build): nothing to do here.
  const background = await importIfPresent<BackgroundModule>(root, 'server/background.ts');
  if (background?.backgroundStartedBy?.() === 'instrumentation') return;
  let mod: HistoryBackgroundModule | undefined;
  try {
    mod = await importIfPresent<HistoryBackgroundModule>(root, 'server/history/background.ts');
  } catch (error) {
    throw new StartError('console', `the history and alert duties did not load: ${errorText(error)}`);
  }
  if (!mod?.startConsoleBackground) return;
  try {
    const running = await mod.startConsoleBackground({ ...process.env, NIMBUS_CONSOLE_URL: process.env.NIMBUS_CONSOLE_URL || consoleUrl });
    started.push({ component: 'console', stop: () => running.stop() });
    log.info({}, 'history and alerts started (backlog samples every minute, alert rules every 30 s)');
  } catch (error) {
    throw new StartError('console', `the history and alert duties did not start: ${errorText(error)}`);
  }
}

type HeartbeatModule = { startHeartbeatScheduler?: (o: HeartbeatSchedulerOptions) => HeartbeatScheduler };
type PlatformDocsModule = {
  PlatformDocs?: new (conn: { endpoint: string; key: string; database: string }) => PlatformDocs;
};

/**
 * The console's heartbeat scheduler (Admin -> Health): the Resolver liveness probe, and endpoint probes once an
 * operator enables them. Its sends are claimed on a stored document, so it is safe beside other console replicas.
 */
async function startHeartbeatPart(
  root: string,
  parts: {
    store: MessageStore;
    client: ServiceBusClient;
    catalog: Catalog;
    cosmos: { endpoint: string; key: string };
    database: string;
    log: Logger;
  },
  started: Stoppable[],
): Promise<void> {
  // The console's instrumentation.ts starts the background duties when Next's server starts (production build):
  // then they run already, on the console's own connections, and only need stopping with the stack. The
  // development server loads instrumentation later, so there the launcher starts them and the hook does nothing.
  const background = await importIfPresent<BackgroundModule>(root, 'server/background.ts');
  const startedBy = background?.backgroundStartedBy?.();
  if (background?.stopBackgroundDuties && startedBy) {
    const stop = background.stopBackgroundDuties;
    started.push({ component: 'console', stop: () => stop() });
    parts.log.info({ startedBy }, 'heartbeat scheduler running (started by the console)');
    return;
  }
  let scheduler: HeartbeatModule | undefined;
  let docsModule: PlatformDocsModule | undefined;
  try {
    scheduler = await importIfPresent<HeartbeatModule>(root, 'server/heartbeat/scheduler.ts');
    docsModule = await importIfPresent<PlatformDocsModule>(root, 'server/heartbeat/platformDocs.ts');
  } catch (error) {
    throw new StartError('console', `the heartbeat scheduler did not load: ${errorText(error)}`);
  }
  if (!scheduler?.startHeartbeatScheduler || !docsModule?.PlatformDocs) {
    parts.log.warn(
      {},
      'heartbeat scheduler not available (server/heartbeat/scheduler.ts): endpoint health stays Unknown',
    );
    return;
  }
  const docs = new docsModule.PlatformDocs({
    endpoint: parts.cosmos.endpoint,
    key: parts.cosmos.key,
    database: parts.database,
  });
  const running = scheduler.startHeartbeatScheduler({
    store: parts.store,
    client: parts.client,
    catalog: parts.catalog,
    docs,
    log: parts.log,
  });
  const stopScheduler = async () => {
    await running.stop();
    docs.close();
  };
  // Recorded as this process's background duties, so the console's instrumentation hook does not start a second.
  background?.claimBackground?.('npm start', stopScheduler);
  started.push({
    component: 'console',
    stop: async () => {
      if (background?.stopBackgroundDuties) await background.stopBackgroundDuties();
      else await stopScheduler();
    },
  });
  parts.log.info(
    {},
    'heartbeat scheduler started (endpoint probes run as set in Admin -> Health)',
  );
}
