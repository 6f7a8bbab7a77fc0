// A duty that must run on one replica at a time (the backlog collector, the alert evaluator): every `everyMs`
// each replica tries to take the lease (lib/store/leases.ts holdLease); the holder runs `work` each tick and keeps
// the lease renewed; the others wait. A holder that dies stops renewing and another replica takes over after the
// TTL. Work is never started after the lease's signal aborted (lost or released).
import { randomUUID } from 'node:crypto';
import { holdLease, type HeldLease, type LeaseStore } from '../../lib/store/index.ts';

type Log = { warn(obj: object, msg: string): void };

export interface LeaderLoopOptions {
  leases: LeaseStore;
  name: string;
  everyMs: number;
  /** Lease time-to-live; default 3 ticks (at least 3 s), so a short store outage does not hand the duty over. */
  ttlMs?: number;
  /** This replica's name in the lease (default a random id). */
  owner?: string;
  work(signal: AbortSignal): Promise<void>;
  log?: Log;
}

export interface LeaderLoop {
  /** Whether this replica holds the lease now. */
  holding(): boolean;
  /** Runs one tick now (tests); resolves when it is done. */
  tick(): Promise<void>;
  stop(): Promise<void>;
}

export function startLeaderLoop(o: LeaderLoopOptions): LeaderLoop {
  const owner = o.owner ?? `${process.pid}-${randomUUID().slice(0, 8)}`;
  const ttlMs = o.ttlMs ?? Math.max(3_000, o.everyMs * 3);
  let held: HeldLease | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const once = async () => {
    if (stopped) return;
    try {
      if (!held || held.signal.aborted) {
        held = undefined;
        held = await holdLease(o.leases, o.name, owner, { ttlMs });
      }
      if (!held || stopped) return;
      await o.work(held.signal);
    } catch (err) {
      o.log?.warn({ duty: o.name, err: err instanceof Error ? err.message : String(err) }, 'background duty failed; next tick tries again');
    }
  };
  const tick = () => (running = running.then(once));
  const timer = setInterval(() => void tick(), o.everyMs);
  timer.unref();
  void tick();
  return {
    holding: () => held !== undefined && !held.signal.aborted,
    tick,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
      await held?.release().catch(() => undefined);
      held = undefined;
    },
  };
}
