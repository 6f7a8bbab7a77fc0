// Each Resolver process announces itself with a lease (`resolver_instance_<owner>`, renewed every few seconds) and
// watches the others'. The Resolver buffers counter deltas for 250 ms off its hot path (docs/store.md): a process
// that is killed loses the deltas it had not flushed, while its rows are written. Every row it wrote carries a
// stamp naming it and its flush window, and every flush records the last window applied (lib/store/counters.ts),
// so when an instance's lease lapses without a release (it died), one surviving instance applies exactly the dead
// one's unflushed deltas (store.recoverCounters). Exact under traffic, unlike a recount, which raced the survivors'
// own buffered deltas (a row counted by the recount and then again by its delta, or the other way round). A clean
// stop flushes and releases: nothing to recover.
//
// A death is claimed before it is recovered: the survivor replaces the lapsed lease, conditionally on its etag,
// with a claim ("recovering <dead>, by <me>") that it renews while it works, and deletes the claim when done. One
// survivor wins the claim; the instance, if it was only late, can no longer renew its lease, and its counter
// flushes are refused wherever the recovery applied its deltas (the flush patch is conditional, counters.ts). A
// failed recovery is tried again (bounded, with backoff) under the same claim; a claim whose holder dies lapses
// and is claimed by another survivor, and the recovery runs again, which is safe: per endpoint it applies only the
// stamps above the entry it read, conditionally on that entry. Each death is recovered on its own, beside the
// checks, so a failing one holds back neither the others nor this instance's own lease.
//
// The store's counterOwner must be this watch's owner (resolver-worker/main.ts passes the same id to both).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { holdLease, isStoreError, keepRenewing, type HeldLease, type Lease, type LeaseStore, type MessageStore } from '../lib/store/index.ts';

export const INSTANCE_LEASE_PREFIX = 'resolver_instance_';

export interface InstanceWatchOptions {
  store: MessageStore;
  leases: LeaseStore;
  owner: string;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Default 15 s. */
  ttlMs?: number;
  /** How often to look for lapsed instances. Default 5 s. */
  checkEveryMs?: number;
  /** Attempts at one death's recovery before giving up (a recount is then needed). Default 4. */
  recoveryAttempts?: number;
  /** The wait before the second attempt; it doubles for each later one. Default 1 s (1 + 2 + 4 s for 4 attempts). */
  retryBaseMs?: number;
}

export interface InstanceWatch {
  /** Dead instances whose lost counter deltas this instance recovered (tests). */
  readonly recoveries: number;
  /** Dead instances whose recovery this instance gave up on (a recount is needed). */
  readonly abandoned: number;
  /**
   * Aborted when this instance finds its own lease claimed or deleted after a lapse: survivors took it for dead and
   * recovered its counter deltas, so its flushes are refused where they did. It should stop (a restart takes a new id).
   */
  readonly declaredDead: AbortSignal;
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
  const attempts = Math.max(1, o.recoveryAttempts ?? 4);
  const retryBaseMs = o.retryBaseMs ?? 1000;
  const name = `${INSTANCE_LEASE_PREFIX}${o.owner}`;
  let held: HeldLease | undefined = await holdLease(o.leases, name, o.owner, { ttlMs });
  if (!held) throw new Error(`the instance lease ${name} is held by another process (owner ids must be unique)`);
  let recoveries = 0;
  let abandoned = 0;
  const dead = new AbortController();
  const stopping = new AbortController();
  /** Deaths this instance is recovering now, by lease name (a check does not start a second one). */
  const recovering = new Map<string, Promise<void>>();
  const warn = (what: string) => (err: unknown) =>
    o.log.warn({ err: logSafeError(err) }, `Resolver: ${what}; trying again at the next check`);

  // Our own lease lost (the store unreachable for a TTL): take it back only if it is still our own document. A
  // claim on it, or no document, means a survivor took us for dead and may have recovered our deltas already.
  const keepOwnLease = async () => {
    if (dead.signal.aborted || stopping.signal.aborted || (held && !held.signal.aborted)) return;
    const lease = await o.leases.resume(name, o.owner, ttlMs);
    if (lease) {
      held = keepRenewing(o.leases, lease, { ttlMs });
      o.log.info({ instance: o.owner }, 'Resolver: took this instance\'s lapsed lease back (nobody had claimed it)');
      return;
    }
    held = undefined;
    dead.abort(new Error(`instance lease ${name} claimed by a survivor`));
    o.log.error(
      { instance: o.owner },
      'Resolver: this instance\'s lease lapsed and a survivor claimed it: its unflushed counter deltas are recovered there, and its counter flushes are refused where they were; restart this process (it takes a new id), then run `npm run recount -- --all` (the deltas of its refused flushes are missing from the counts)',
    );
  };

  /** One death: claim it, recover (bounded retries), delete the claim. */
  const recoverDeath = async (lapsed: Lease) => {
    // A lapsed claim names the death it was recovering; a lapsed instance lease is its own owner's.
    const deadOwner = lapsed.recovering ?? lapsed.owner;
    const won = await o.leases.claim(lapsed, o.owner, deadOwner, ttlMs);
    if (!won) return; // another survivor claimed it first
    const claim = keepRenewing(o.leases, won, { ttlMs });
    let applied = 0;
    let failure: unknown;
    for (let attempt = 1; ; attempt++) {
      try {
        applied += await o.store.recoverCounters(deadOwner);
        failure = undefined;
        break;
      } catch (err) {
        failure = err;
        if (hasApplied(err)) applied += err.applied;
      }
      if (attempt >= attempts || claim.signal.aborted || stopping.signal.aborted) break;
      await sleep(retryBaseMs * 2 ** (attempt - 1), undefined, { signal: AbortSignal.any([claim.signal, stopping.signal]) }).catch(() => undefined);
    }
    if (failure === undefined) {
      recoveries++;
      // A claim that cannot be deleted (the store gone again) lapses, and its next holder's run applies nothing.
      await claim.remove().catch(() => false);
      o.log.warn({ instance: deadOwner, deltas: applied }, 'Resolver: another instance stopped without a clean stop; applied the counter deltas it had not flushed');
      return;
    }
    const detail = { instance: deadOwner, deltas: applied, endpoints: failedEndpoints(failure), err: logSafeError(failure) };
    if (claim.signal.aborted || stopping.signal.aborted) {
      // Our claim was taken over (we were too slow to renew it) or we are stopping: whoever holds it next goes on.
      await claim.drop();
      o.log.warn(detail, 'Resolver: left the recovery of a dead instance\'s counter deltas unfinished to the next survivor that claims it');
      return;
    }
    abandoned++;
    await claim.remove().catch(() => false);
    o.log.warn(
      { ...detail, attempts },
      'Resolver: gave up recovering the counter deltas of an instance that stopped without a clean stop; its unflushed deltas are missing from the counters: run `npm run recount -- <the endpoints listed>`; when none is listed, name every endpoint it may have written to (`--all` covers only endpoints that already have a counters document, not those whose first events it wrote)',
    );
  };

  const check = async () => {
    await keepOwnLease().catch(warn('could not take this instance\'s lease back'));
    for (const lapsed of await o.leases.lapsed(INSTANCE_LEASE_PREFIX)) {
      // Our own lease (lapsed, or a claim on it): keepOwnLease's business; the survivors recover us.
      if (lapsed.name === name || recovering.has(lapsed.name) || stopping.signal.aborted) continue;
      const job = recoverDeath(lapsed)
        .catch(warn(`could not recover the counter deltas of ${lapsed.recovering ?? lapsed.owner}`))
        .finally(() => recovering.delete(lapsed.name));
      recovering.set(lapsed.name, job);
    }
  };
  // One check at a time and none queued behind it: while the store does not answer, a check waits out the client's
  // time-out (30 s) every tick, and ticks chained behind it piled up without bound (and still ran after stop()).
  let checking: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (checking || stopping.signal.aborted) return;
    checking = check()
      .catch(warn('instance check failed'))
      .finally(() => (checking = undefined));
  }, o.checkEveryMs ?? 5000);
  timer.unref();
  return {
    get recoveries() {
      return recoveries;
    },
    get abandoned() {
      return abandoned;
    },
    declaredDead: dead.signal,
    async stop() {
      clearInterval(timer);
      stopping.abort();
      await checking;
      await Promise.all(recovering.values());
      await held?.release();
      held = undefined;
    },
  };
}

/**
 * An error as the warnings log it: the store's own errors (lib/store/errors.ts) by their message, written here
 * (isStoreError: another copy of the module's too, as server/http.ts recognises them); anything else (a Cosmos
 * error the store passed on unclassified) by name and status only, since a service's own text can name the account.
 */
export function logSafeError(err: unknown): string {
  if (!(err instanceof Error)) return 'unknown error';
  if (isStoreError(err)) return err.message;
  const status = (err as { code?: unknown; statusCode?: unknown }).statusCode ?? (err as { code?: unknown }).code;
  return typeof status === 'number' || typeof status === 'string' ? `${err.name} (${String(status)})` : err.name;
}

function hasApplied(err: unknown): err is { applied: number } {
  return typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'CounterRecoveryIncompleteError' && typeof (err as { applied?: unknown }).applied === 'number';
}

function failedEndpoints(err: unknown): readonly string[] {
  if (typeof err !== 'object' || err === null || (err as { name?: unknown }).name !== 'CounterRecoveryIncompleteError') return [];
  const endpoints = (err as { endpoints?: unknown }).endpoints;
  return Array.isArray(endpoints) ? endpoints.filter((e): e is string => typeof e === 'string') : [];
}
