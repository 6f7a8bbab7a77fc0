// Leases in Cosmos, so background duties stay single when the console or the Resolver runs as
// several replicas: one reconcile at a time, one runner per bulk job or replay, one alert evaluator and backlog
// sampler (the heartbeat's one sender per tick is a compare-and-swap on its schedule document instead). A lease is a document `{ id: name, owner, expiresAt }` in the `leases` container, taken and
// renewed by compare-and-swap on its etag; a replica that dies stops renewing and loses the lease when it expires.
//
// Expiry is wall-clock time written by the holder, so replicas' clocks must agree to well within the lease's
// time-to-live (seconds of skew against a TTL of tens of seconds is fine; NTP-synced hosts are far closer).
import type { Container, Database, ItemDefinition } from '@azure/cosmos';
import { openContainer, type ContainerSlot } from './containers.ts';
import { cosmosStatus } from './errors.ts';

export const LEASES_CONTAINER = 'leases';

interface LeaseDocument extends ItemDefinition {
  id: string;
  owner: string;
  expiresAt: number;
  acquiredAt: number;
  recovering?: string;
}

/** A lease held by `owner` until `expiresAt` (epoch ms). `etag` is the version the holder last wrote. */
export interface Lease {
  name: string;
  owner: string;
  expiresAt: number;
  etag: string;
  /**
   * Set on a claim (see claim()): `owner` is recovering after this holder, whose lease it replaced. Renewals keep it.
   */
  recovering?: string;
}

export interface LeaseStoreOptions {
  now?: () => number;
}

export class LeaseStore {
  private readonly slot: ContainerSlot = {};
  private readonly database: Database;
  /** The clock leases are written by (epoch ms): a holder compares its lease's expiry with this, not its own. */
  readonly now: () => number;

  constructor(database: Database, options: LeaseStoreOptions = {}) {
    this.database = database;
    this.now = options.now ?? Date.now;
  }

  private container(): Promise<Container> {
    return openContainer(this.slot, this.database, LEASES_CONTAINER, '/id');
  }

  /**
   * Takes the lease `name` for `owner` for `ttlMs` when it is free, expired, or already `owner`'s (then it is
   * renewed). Returns the lease, or undefined when another owner holds it (or won a race for it just now).
   */
  async acquire(name: string, owner: string, ttlMs: number): Promise<Lease | undefined> {
    const c = await this.container();
    const now = this.now();
    const doc: LeaseDocument = { id: name, owner, expiresAt: now + ttlMs, acquiredAt: now };
    const current = await c.item(name, name).read<LeaseDocument>();
    if (current.statusCode === 404 || !current.resource) {
      try {
        const r = await c.items.create(doc);
        return toLease(name, owner, doc.expiresAt, r.etag);
      } catch (err) {
        if (cosmosStatus(err) === 409) return undefined;
        throw err;
      }
    }
    const held = current.resource;
    if (held.owner !== owner && held.expiresAt > now) return undefined;
    if (held.owner === owner) doc.acquiredAt = held.acquiredAt;
    return this.replaceIf(c, doc, current.etag);
  }

  /** Extends a held lease; undefined when it was lost meanwhile (expired and taken by someone else). */
  async renew(lease: Lease, ttlMs: number): Promise<Lease | undefined> {
    const c = await this.container();
    const now = this.now();
    return this.replaceIf(c, { id: lease.name, owner: lease.owner, expiresAt: now + ttlMs, acquiredAt: now, ...recovering(lease) }, lease.etag);
  }

  /**
   * Replaces a lapsed lease, if it is still the version `lapsed` names, with a claim: a lease of `by`'s that says
   * it is recovering after `deadOwner`. The holder of the version replaced can no longer renew it (its etag is
   * gone). Undefined for all but one of racing claimers, and for a lease read without an etag (no condition).
   */
  async claim(lapsed: Lease, by: string, deadOwner: string, ttlMs: number): Promise<Lease | undefined> {
    if (!lapsed.etag) return undefined;
    const c = await this.container();
    const now = this.now();
    return this.replaceIf(c, { id: lapsed.name, owner: by, expiresAt: now + ttlMs, acquiredAt: now, recovering: deadOwner }, lapsed.etag);
  }

  /**
   * Renews `name` for `owner` only if the stored document is still `owner`'s own lease (expired or not; not a
   * claim on it, not deleted): taking a lease back after a lapse, when nobody may have acted on the lapse.
   */
  async resume(name: string, owner: string, ttlMs: number): Promise<Lease | undefined> {
    const c = await this.container();
    const current = await c.item(name, name).read<LeaseDocument>();
    const held = current.resource;
    if (current.statusCode === 404 || !held || held.owner !== owner || held.recovering !== undefined) return undefined;
    const now = this.now();
    return this.replaceIf(c, { id: name, owner, expiresAt: now + ttlMs, acquiredAt: held.acquiredAt }, current.etag);
  }

  /** Gives the lease up at once (expired now), so another replica need not wait for the TTL. */
  async release(lease: Lease): Promise<void> {
    const c = await this.container();
    await this.replaceIf(c, { id: lease.name, owner: lease.owner, expiresAt: 0, acquiredAt: 0 }, lease.etag);
  }

  /** The current holder of `name` while its lease is unexpired. */
  async holder(name: string): Promise<{ owner: string; expiresAt: number } | undefined> {
    const c = await this.container();
    const r = await c.item(name, name).read<LeaseDocument>();
    const d = r.resource;
    if (!d || d.expiresAt <= this.now()) return undefined;
    return { owner: d.owner, expiresAt: d.expiresAt };
  }

  /**
   * Leases named `prefix…` that ran out without being released (`expiresAt` in the past but not 0): their holders
   * stopped renewing without saying goodbye - a process that died. Released leases (expiresAt 0) are not listed.
   */
  async lapsed(prefix: string): Promise<Lease[]> {
    const c = await this.container();
    const now = this.now();
    const r = await c.items
      .query<LeaseDocument & { _etag?: string }>({
        query: 'SELECT * FROM c WHERE STARTSWITH(c.id, @prefix) AND c.expiresAt > 0 AND c.expiresAt <= @now',
        parameters: [
          { name: '@prefix', value: prefix },
          { name: '@now', value: now },
        ],
      })
      .fetchAll();
    return r.resources.map((d) => ({ ...toLease(d.id, d.owner, d.expiresAt, d._etag), ...recovering(d) }));
  }

  /** Deletes the lease document if it is still the version `lease` names; true for exactly one of racing callers. */
  async removeIf(lease: Lease): Promise<boolean> {
    const c = await this.container();
    try {
      await c.item(lease.name, lease.name).delete(lease.etag ? { accessCondition: { type: 'IfMatch', condition: lease.etag } } : {});
      return true;
    } catch (err) {
      const status = cosmosStatus(err);
      if (status === 412 || status === 404) return false;
      throw err;
    }
  }

  private async replaceIf(c: Container, doc: LeaseDocument, etag: string | undefined): Promise<Lease | undefined> {
    try {
      const r = await c.item(doc.id, doc.id).replace(doc, etag ? { accessCondition: { type: 'IfMatch', condition: etag } } : {});
      return { ...toLease(doc.id, doc.owner, doc.expiresAt, r.etag), ...recovering(doc) };
    } catch (err) {
      const status = cosmosStatus(err);
      if (status === 412 || status === 404) return undefined;
      throw err;
    }
  }
}

function toLease(name: string, owner: string, expiresAt: number, etag: string | undefined): Lease {
  return { name, owner, expiresAt, etag: etag ?? '' };
}

/** The claim's `recovering` field, when there is one (absent, not undefined, otherwise: strict optional fields). */
function recovering(from: { recovering?: unknown }): { recovering?: string } {
  return typeof from.recovering === 'string' ? { recovering: from.recovering } : {};
}

export interface HeldLease {
  /** Aborted when the lease is lost (a renewal found another owner) or released. */
  readonly signal: AbortSignal;
  /**
   * The expiry (epoch ms, the LeaseStore's clock) of the last renewal that succeeded; 0 once released or lost. A
   * holder stalled past it has not seen its signal abort (no renewal ran to find the lease taken), so work that must
   * not outlive the lease compares this with the clock right before it acts.
   */
  readonly expiresAt: number;
  /** Stops renewing and releases the lease. */
  release(): Promise<void>;
  /** Stops renewing and deletes the lease document if it is still the version last renewed; false if it was not. */
  remove(): Promise<boolean>;
  /** Stops renewing and leaves the document as it is, to lapse (another holder may take it after its TTL). */
  drop(): Promise<void>;
}

export interface HoldLeaseOptions {
  ttlMs: number;
  /** How often to renew; default a third of the TTL, so two renewals may fail before the lease lapses. */
  renewEveryMs?: number;
  /** Called once with the error when renewals fail (the store unreachable); the lease is treated as lost. */
  onError?: (err: unknown) => void;
}

/**
 * Acquires `name` and keeps renewing it in the background until released or lost. Returns undefined when another
 * owner holds it. The holder must stop its work when `signal` aborts: past that point another replica may start.
 */
export async function holdLease(leases: LeaseStore, name: string, owner: string, options: HoldLeaseOptions): Promise<HeldLease | undefined> {
  const lease = await leases.acquire(name, owner, options.ttlMs);
  return lease ? keepRenewing(leases, lease, options) : undefined;
}

/** Keeps renewing a lease already taken (acquired, claimed or resumed), as holdLease does. */
export function keepRenewing(leases: LeaseStore, taken: Lease, options: HoldLeaseOptions): HeldLease {
  let lease: Lease | undefined = taken;
  const name = taken.name;
  const controller = new AbortController();
  const every = options.renewEveryMs ?? Math.max(50, Math.floor(options.ttlMs / 3));
  let renewing: Promise<void> = Promise.resolve();
  let inFlight = false;
  const timer = setInterval(() => {
    // A renewal slower than the interval (a loaded store, its 429 retries) is still in flight: one started now
    // would send the same etag, and whichever landed second got a 412 - taken for a lost lease, stopping a holder
    // whose lease was fine. Skip the tick; the one in flight renews.
    if (inFlight) return;
    inFlight = true;
    renewing = (async () => {
      if (controller.signal.aborted || !lease) return;
      try {
        const next = await leases.renew(lease, options.ttlMs);
        if (!next) controller.abort(new Error(`lease ${name} lost`));
        else lease = next;
      } catch (err) {
        // A renewal that cannot reach the store cannot prove the lease is still ours once it expires: give it up
        // rather than risk two holders.
        if (lease && Date.now() >= lease.expiresAt) {
          options.onError?.(err);
          controller.abort(err);
        }
      } finally {
        inFlight = false;
      }
    })();
  }, every);
  timer.unref();
  controller.signal.addEventListener('abort', () => clearInterval(timer), { once: true });
  /** Stops renewing; the version last renewed (a write conditional on it fails if the lease was lost). */
  const stop = async (why: string): Promise<Lease | undefined> => {
    clearInterval(timer);
    await renewing;
    const held = lease;
    lease = undefined;
    if (!controller.signal.aborted) controller.abort(new Error(`lease ${name} ${why}`));
    return held;
  };
  return {
    signal: controller.signal,
    get expiresAt() {
      return lease && !controller.signal.aborted ? lease.expiresAt : 0;
    },
    async release() {
      const held = await stop('released');
      if (held) await leases.release(held).catch(() => undefined);
    },
    async remove() {
      const held = await stop('removed');
      return held ? leases.removeIf(held) : false;
    },
    async drop() {
      await stop('dropped');
    },
  };
}
