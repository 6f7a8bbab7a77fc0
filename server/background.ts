// The console's background duties, started once per process whichever way the console runs: `npm run console`,
// `next start`, the standalone server (.next/standalone/server.js) and the Docker image all reach them through
// instrumentation.ts (Next's register() hook); `npm start` runs the console in its own process and would otherwise
// start the scheduler a second time, so both paths go through the one slot below.
//
// The duties are safe with any number of console replicas (docs/deploy.md, "Which duty runs where"): the heartbeat
// scheduler claims each send on a stored document with a compare-and-swap, so one replica sends per interval.
import { log } from './log.ts';

/** What runs in the background of this process, so that a second start (another entry point) does nothing. */
interface BackgroundSlot {
  started?: { by: string; stop(): Promise<void> };
  starting?: Promise<void>;
}

const KEY = Symbol.for('nimbus.console.background');
const slot = ((globalThis as Record<symbol, unknown>)[KEY] ??= {}) as BackgroundSlot;

/** Who started this process's background duties (undefined: nobody yet). */
export function backgroundStartedBy(): string | undefined {
  return slot.started?.by;
}

/**
 * Marks this process's duties as started by `by` with `stop` to end them; false (and nothing recorded) when they
 * were started already. The launcher uses it for the scheduler it runs on its own connections.
 */
export function claimBackground(by: string, stop: () => Promise<void>): boolean {
  if (slot.started || slot.starting) return false;
  slot.started = { by, stop };
  return true;
}

/** Stops what claimBackground / startBackgroundDuties started (tests, the launcher's shutdown). */
export async function stopBackgroundDuties(): Promise<void> {
  await slot.starting?.catch(() => undefined);
  const s = slot.started;
  slot.started = undefined;
  await s?.stop();
}

const RETRY_MS = 30_000;

/**
 * NIMBUS_BACKGROUND: `off` (or 0, false, no) leaves this replica without background duties - the heartbeat
 * scheduler, history and alerts, and the bulk-job runner (docs/deploy.md); anything else, or unset, runs them.
 */
export function backgroundDutiesOn(env: Record<string, string | undefined> = process.env): boolean {
  return !['0', 'off', 'false', 'no'].includes((env.NIMBUS_BACKGROUND ?? '').trim().toLowerCase());
}

/**
 * Starts the heartbeat scheduler on the console's own connections (server/context.ts, from the environment). A
 * store or bus that is not reachable yet is retried every 30 s: the console serves pages meanwhile, and health
 * pages show the last known state. NIMBUS_BACKGROUND=off leaves the duties to other replicas (docs/deploy.md).
 */
export function startBackgroundDuties(env: Record<string, string | undefined> = process.env): Promise<void> {
  if (slot.started || slot.starting) return slot.starting ?? Promise.resolve();
  if (!backgroundDutiesOn(env)) {
    log.info({}, 'background duties off (NIMBUS_BACKGROUND=off): the heartbeat scheduler and the bulk-job runner run on other replicas');
    return Promise.resolve();
  }
  let stopped = false;
  const timers = new Set<NodeJS.Timeout>();
  const running: Array<{ stop(): Promise<void> }> = [];
  // Each duty is started on its own and retried on its own, so one that cannot start yet does not restart another.
  const duty = (name: string, start: () => Promise<{ stop(): Promise<void> }>) => {
    const attempt = async (): Promise<void> => {
      if (stopped) return;
      try {
        running.push(await start());
        log.info({}, `${name} started`);
      } catch (err) {
        log.warn(
          { err: err instanceof Error ? err.message : String(err), retryInMs: RETRY_MS },
          `${name} not started yet (store or bus unreachable?)`,
        );
        const t = setTimeout(() => {
          timers.delete(t);
          void attempt();
        }, RETRY_MS);
        t.unref();
        timers.add(t);
      }
    };
    return attempt();
  };
  const attempt = async (): Promise<void> => {
    await Promise.all([
      duty('heartbeat scheduler (one send per interval across all console replicas)', async () => {
        const { startConsoleHeartbeat } = await import('./heartbeat/services.ts');
        return startConsoleHeartbeat(env);
      }),
      // Backlog samples, series retention and the alert evaluator, each under a lease (docs/operations.md).
      duty('history and alerts', async () => {
        const { startConsoleBackground } = await import('./history/background.ts');
        return startConsoleBackground(env);
      }),
      // Bulk jobs left unfinished by a replica that stopped resume here (one runner per job, by lease).
      duty('bulk operations runner', async () => {
        const { startConsoleOperations } = await import('./operations/service.ts');
        return startConsoleOperations(env);
      }),
    ]);
  };
  slot.started = {
    by: 'instrumentation',
    stop: async () => {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      await Promise.all(running.map((r) => r.stop().catch(() => undefined)));
    },
  };
  const starting = attempt();
  slot.starting = starting;
  return starting.finally(() => {
    if (slot.starting === starting) slot.starting = undefined;
  });
}
