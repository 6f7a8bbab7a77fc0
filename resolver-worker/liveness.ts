// Each Resolver process announces itself with a lease (`resolver_instance_<owner>`, renewed every few seconds) and
// watches the others'. The Resolver buffers counter deltas for 250 ms off its hot path (docs/store.md): a process
// that is killed loses the deltas it had not flushed, while its rows are written. Every row it wrote carries a
// stamp naming it and its flush window, and every flush records the last window applied (lib/store/counters.ts),
// so when an instance's lease lapses without a release (it died), one surviving instance - whoever deletes the
// lapsed lease document first - applies exactly the dead one's unflushed deltas (store.recoverCounters). Exact
// under traffic, unlike a recount, which raced the survivors' own buffered deltas (a row counted by the recount
// and then again by its delta, or the other way round). A clean stop flushes and releases: nothing to recover.
//
// The store's counterOwner must be this watch's owner (resolver-worker/main.ts passes the same id to both).
import type { Logger } from 'pino';
import { holdLease, type HeldLease, type LeaseStore, type MessageStore } from '../lib/store/index.ts';

export const INSTANCE_LEASE_PREFIX = 'resolver_instance_';

export interface InstanceWatchOptions {
  store: MessageStore;
  leases: LeaseStore;
  owner: string;
  log: Pick<Logger, 'info' | 'warn'>;
  /** Default 15 s. */
  ttlMs?: number;
  /** How often to look for lapsed instances. Default 5 s. */
  checkEveryMs?: number;
}

export interface InstanceWatch {
  /** Dead instances whose lost counter deltas this instance recovered (tests). */
  readonly recoveries: number;
  /** Releases this instance's lease (a clean stop: nobody recounts for it) and stops watching. */
  stop(): Promise<void>;
}

/**
 * Recounts every endpoint that has a counters document, readable or not (a recount rewrites one that no longer
 * parses, which the counts read leaves out); returns how many.
 */
export async function recountAll(store: MessageStore): Promise<number> {
  const { endpoints, unreadable } = await store.getAllCounts();
  const ids = [...endpoints.map((e) => e.endpointId), ...unreadable];
  for (const endpointId of ids) await store.recountEndpoint(endpointId);
  return ids.length;
}

export async function startInstanceWatch(o: InstanceWatchOptions): Promise<InstanceWatch> {
  const ttlMs = o.ttlMs ?? 15_000;
  const name = `${INSTANCE_LEASE_PREFIX}${o.owner}`;
  let held: HeldLease | undefined = await holdLease(o.leases, name, o.owner, { ttlMs });
  if (!held) throw new Error(`the instance lease ${name} is held by another process (owner ids must be unique)`);
  let recoveries = 0;
  let checking: Promise<void> = Promise.resolve();
  const check = async () => {
    for (const lapsed of await o.leases.lapsed(INSTANCE_LEASE_PREFIX)) {
      if (lapsed.owner === o.owner) continue;
      // Exactly one survivor wins the delete, and so does the recovery for this death (itself applied at most once
      // per endpoint: recoverCounters is conditional on nobody having done it).
      if (!(await o.leases.removeIf(lapsed))) continue;
      const stamps = await o.store.recoverCounters(lapsed.owner);
      recoveries++;
      o.log.warn({ instance: lapsed.owner, deltas: stamps }, 'Resolver: another instance stopped without a clean stop; applied the counter deltas it had not flushed');
    }
    // Our own lease lost (the store unreachable for a TTL): take it again, so that our death stays detectable.
    if (held?.signal.aborted) held = await holdLease(o.leases, name, o.owner, { ttlMs });
  };
  const timer = setInterval(() => {
    checking = checking.then(check).catch((err: unknown) => {
      o.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'Resolver: instance check failed; trying again');
    });
  }, o.checkEveryMs ?? 5000);
  timer.unref();
  return {
    get recoveries() {
      return recoveries;
    },
    async stop() {
      clearInterval(timer);
      await checking;
      await held?.release();
      held = undefined;
    },
  };
}
