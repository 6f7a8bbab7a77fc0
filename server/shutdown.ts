// The graceful stop of a console run by Next's own server - the standalone server.js (the Docker image's console
// role) and `next start`. Next's SIGTERM/SIGINT handler closes its HTTP server and then calls process.exit at once:
// the background duties (server/background.ts) would die holding their leases (another replica waits for them to
// run out, minutes for the backlog collector) with a bulk job's lot possibly cut mid-way, and the Service Bus and
// Cosmos clients would be dropped rather than closed. A container platform sends SIGTERM and waits a grace period
// before SIGKILL, so there is time to do better: instrumentation.ts hands Next's handler to stopGracefullyOnSignals,
// which runs it beside the duties' stop, holds back its exit until both are done, closes the clients, and exits 0 -
// or exits 1 when NIMBUS_STOP_GRACE_MS passes first (docs/deploy.md, "Stopping a console").
//
// Consoles run in-process by server/console.ts (`npm start`, `npm run console`, the browser tests) already stop
// their duties and close the clients themselves (scripts/start.ts, scripts/console.ts) and their signal handlers
// are theirs: startConsole marks the process (leaveSignalsToLauncher) and nothing here touches them.
import { ConfigError, consoleEnvSchema, DEFAULT_STOP_GRACE_MS } from './config.ts';
import { log } from './log.ts';
import { markStopping } from './stopping.ts';

export { DEFAULT_STOP_GRACE_MS };

/**
 * NIMBUS_STOP_GRACE_MS: how long a stop may take before the process exits anyway (unset or empty: the default).
 * Read with the console's own schema (server/config.ts), so a bad value is the ConfigError that names it there too.
 */
export function stopGraceMs(env: Record<string, string | undefined> = process.env): number {
  const raw = env.NIMBUS_STOP_GRACE_MS?.trim() || undefined;
  const r = consoleEnvSchema.shape.NIMBUS_STOP_GRACE_MS.safeParse(raw);
  if (!r.success) throw new ConfigError(r.error.issues[0]?.message ?? 'NIMBUS_STOP_GRACE_MS is not valid');
  return r.data;
}

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;
type StopSignal = (typeof SIGNALS)[number];
/** What Next's handler (next/dist/server/lib/start-server.js) exits with once its server has closed on the signal. */
const SERVER_CLOSED_EXIT: Record<StopSignal, number> = { SIGTERM: 143, SIGINT: 130 };

/** The part of `process` the stop uses (a test hands in its own). */
export interface SignalProcess {
  listeners(signal: StopSignal): Array<(...args: unknown[]) => void>;
  on(signal: StopSignal, listener: (signal: StopSignal) => void): unknown;
  off(signal: StopSignal, listener: (...args: unknown[]) => void): unknown;
  exit: (code?: number) => never;
}

export interface GracefulStopOptions {
  graceMs: number;
  /** Stops the background duties (their leases released); runs at once, beside Next's close of its HTTP server. */
  stopDuties(): Promise<void>;
  /** Closes the clients, once the duties and the HTTP server's requests in flight no longer use them. */
  closeClients(): Promise<void>;
  proc?: SignalProcess;
}

// On globalThis: Next bundles its own copy of this module into the instrumentation hook, apart from the one the
// launcher (server/console.ts) imports through tsx.
const KEY = Symbol.for('nimbus.console.shutdown');
const slot = ((globalThis as Record<symbol, unknown>)[KEY] ??= {}) as { launcher?: boolean; installed?: WeakSet<object> };

/** server/console.ts, before Next prepares: this process's launcher owns its signals and its stop. */
export function leaveSignalsToLauncher(): void {
  slot.launcher = true;
}

/**
 * Takes over the SIGTERM/SIGINT handlers installed so far - Next's own, in its server - and on the first signal runs
 * them beside `stopDuties`, holding back the process.exit they end with until the duties have stopped too; then
 * closes the clients and exits 0. A stop still running after `graceMs` exits 1. Installs nothing (false) a second
 * time, or when no handler is there to take over (NEXT_MANUAL_SIG_HANDLE: whoever set it stops the process).
 */
export function stopGracefullyOnSignals(o: GracefulStopOptions): boolean {
  const proc = o.proc ?? (process as unknown as SignalProcess);
  const installed = (slot.installed ??= new WeakSet());
  if (installed.has(proc)) return false;
  const taken = new Map(SIGNALS.map((s) => [s, proc.listeners(s)] as const));
  if (SIGNALS.every((s) => taken.get(s)!.length === 0)) return false;
  installed.add(proc);
  let stopping = false;
  const onSignal = (signal: StopSignal) => {
    if (stopping) return; // a shell relays Ctrl-C a second time; the first stop goes on
    stopping = true;
    // First: long-polls in flight answer now, or Next's close (which waits for every request) would outlast the grace.
    markStopping();
    const exit = proc.exit;
    // Ends the process once, with proc.exit given back first (anything after the stop exits as usual).
    const finish = (code: number) => {
      proc.exit = exit;
      exit.call(proc, code);
    };
    const deadline = setTimeout(() => {
      log.warn({ signal, graceMs: o.graceMs }, 'stop did not finish within NIMBUS_STOP_GRACE_MS: exiting now');
      // A code asked for during the stop (exitCode, below) stands; otherwise 1: the stop did not finish.
      finish(exitCode || 1);
    }, o.graceMs);
    log.info({ signal, graceMs: o.graceMs }, 'console stopping: the background duties and the HTTP server, then the clients');
    // Next's handler ends with process.exit(143 or 130) once its server has closed; until the duties are done, that
    // exit only says its part is over. Any other exit during the stop is someone's failure: its code is kept for the
    // final exit rather than lost to a 0.
    let serverClosed!: () => void;
    const server = new Promise<void>((resolve) => (serverClosed = resolve));
    let exitCode = 0;
    proc.exit = ((code?: number) => {
      if (code === SERVER_CLOSED_EXIT[signal]) return serverClosed();
      log.warn({ signal, code }, 'process.exit called during the stop: its code is kept for the exit');
      if (exitCode === 0 && code !== undefined) exitCode = code;
    }) as unknown as SignalProcess['exit'];
    for (const handler of taken.get(signal) ?? []) {
      try {
        handler(signal);
      } catch (err) {
        log.warn({ err: err instanceof Error ? err.message : String(err) }, 'the server\'s own stop failed');
        serverClosed();
      }
    }
    if ((taken.get(signal) ?? []).length === 0) serverClosed();
    const duties = o.stopDuties().catch((err: unknown) => log.warn({ err: err instanceof Error ? err.message : String(err) }, 'background duties did not stop cleanly'));
    void Promise.all([duties, server])
      .then(() => o.closeClients())
      .catch((err: unknown) => log.warn({ err: err instanceof Error ? err.message : String(err) }, 'clients did not close cleanly'))
      .then(() => {
        clearTimeout(deadline);
        log.info({ signal, exitCode }, exitCode === 0 ? 'console stopped gracefully' : 'console stopped; exiting with the code asked for during the stop');
        finish(exitCode);
      });
  };
  for (const s of SIGNALS) {
    for (const handler of taken.get(s)!) proc.off(s, handler);
    proc.on(s, onSignal);
  }
  return true;
}

/**
 * instrumentation.ts: the console's own stop - the duties of server/background.ts and the connections of
 * server/context.ts - unless a launcher runs this console (leaveSignalsToLauncher), with the grace from the
 * environment. A bad value is one of the console's configuration errors (server/config.ts: the launchers refuse to
 * start, and the standalone server answers every request with the ConfigError naming it); the stop is installed
 * all the same, with the default, since the process must still stop well.
 */
export function stopConsoleGracefullyOnSignals(env: Record<string, string | undefined> = process.env): boolean {
  if (slot.launcher) return false;
  let graceMs = DEFAULT_STOP_GRACE_MS;
  try {
    graceMs = stopGraceMs(env);
  } catch (err) {
    log.error({ err: (err as Error).message, graceMs }, 'NIMBUS_STOP_GRACE_MS is not valid (the console is not configured); the stop uses the default');
  }
  return stopGracefullyOnSignals({
    graceMs,
    stopDuties: async () => (await import('./background.ts')).stopBackgroundDuties(),
    closeClients: async () => (await import('./context.ts')).closeContext(),
  });
}
