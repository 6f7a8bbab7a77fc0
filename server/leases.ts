// This console replica's identity for leases and claims (lib/store/leases.ts), and the lease store on the console's
// database. One owner id per process: a restarted replica is a new owner, so it never mistakes a lease its previous
// life held for its own (that one runs out within its TTL).
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { LeaseStore, type MessageStore } from '../lib/store/index.ts';

const KEY = Symbol.for('nimbus.console.replicaId');
const slot = globalThis as Record<symbol, unknown>;

/** `host:pid:random`, fixed for this process (kept on globalThis: Next may load this module more than once). */
export function replicaId(): string {
  return ((slot[KEY] as string | undefined) ??= `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`);
}

const stores = new WeakMap<MessageStore, LeaseStore>();

/** The lease store on `store`'s database (one per store, so its container handle is opened once). */
export function leasesOf(store: MessageStore): LeaseStore {
  let leases = stores.get(store);
  if (!leases) stores.set(store, (leases = new LeaseStore(store.database)));
  return leases;
}
