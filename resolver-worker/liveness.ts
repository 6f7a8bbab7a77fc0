// Each Resolver process announces itself with a lease (`resolver_instance_<owner>`, renewed every few seconds) and
// watches the others'. The Resolver buffers counter deltas for 250 ms off its hot path (docs/store.md): a process
// that is killed loses the deltas it had not flushed, while its rows are written, so the counters drift from the
// rows. When an instance's lease lapses without a release (it died), one surviving instance - whoever deletes the
// lapsed lease document first - recounts every endpoint's counters from the rows, as `npm start` does after an
// unclean stop. A clean stop flushes and releases, so nothing is recounted.
//
// Bounded: a death is noticed within the TTL plus one check. The recount then runs under traffic, and a live
// instance's delta still in its 250 ms buffer for a row the recount already counted is applied on top
// (recountEndpoint's etag check covers deltas applied while it counts, not those applied after it writes). So the
// same instance recounts once more when the counters have been quiet for `quietMs` (no delta applied by anyone):
// with nothing in flight that recount is exact. Under unbroken traffic it waits for the first quiet moment.
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
  /** The follow-up recount waits for the counters to be unchanged this long. Default 5 s. */
  quietMs?: number;
}

export interface InstanceWatch {
  /** Endpoints recounted so far by this instance after another one died (tests). */
  readonly recounts: number;
  /** Releases this instance's lease (a clean stop: nobody recounts for it) and stops watching. */
  stop(): Promise<void>;
}

/** Recounts every endpoint that has counters; returns how many. */
export async function recountAll(store: MessageStore): Promise<number> {
  const { endpoints } = await store.getAllCounts();
  for (const e of endpoints) await store.recountEndpoint(e.endpointId);
  return endpoints.length;
}

export async function startInstanceWatch(o: InstanceWatchOptions): Promise<InstanceWatch> {
  const ttlMs = o.ttlMs ?? 15_000;
  const name = `${INSTANCE_LEASE_PREFIX}${o.owner}`;
  let held: HeldLease | undefined = await holdLease(o.leases, name, o.owner, { ttlMs });
  if (!held) throw new Error(`the instance lease ${name} is held by another process (owner ids must be unique)`);
  let recounts = 0;
  let checking: Promise<void> = Promise.resolve();
  /** A death was handled here: recount again once the counters are quiet. */
  let followUp = false;
  let lastSeen = '';
  let quietSince = 0;
  const followUpWhenQuiet = async () => {
    const seen = JSON.stringify((await o.store.getAllCounts()).endpoints.map((e) => [e.endpointId, e.buckets]));
    if (seen !== lastSeen) {
      lastSeen = seen;
      quietSince = Date.now();
      return;
    }
    if (Date.now() - quietSince < (o.quietMs ?? 5000)) return;
    followUp = false;
    recounts += await recountAll(o.store);
    o.log.info({}, 'Resolver: counters recounted again once quiet (after another instance stopped without a clean stop)');
  };
  const check = async () => {
    for (const lapsed of await o.leases.lapsed(INSTANCE_LEASE_PREFIX)) {
      if (lapsed.owner === o.owner) continue;
      // Exactly one survivor wins the delete, and so does the recount for this death.
      if (!(await o.leases.removeIf(lapsed))) continue;
      o.log.warn({ instance: lapsed.owner }, 'Resolver: another instance stopped without a clean stop; recounting the counters from the rows');
      recounts += await recountAll(o.store);
      followUp = true;
      lastSeen = '';
    }
    if (followUp) await followUpWhenQuiet();
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
    get recounts() {
      return recounts;
    },
    async stop() {
      clearInterval(timer);
      await checking;
      await held?.release();
      held = undefined;
    },
  };
}
