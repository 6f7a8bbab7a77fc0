// Shared test fixtures: an embedded Cosmos server and a store on a fresh database, plus message builders.
import { randomUUID } from 'node:crypto';
import { CosmosClient } from '@azure/cosmos';
import type { MessageType } from '@nimbus/sdk/contract';
import { SELF } from '@nimbus/sdk/contract';
import { startEmbeddedCosmos, type EmbeddedCosmos } from '../cosmos.ts';
import { createStore, type MessageStore, type StoreOptions } from '../store.ts';
import type { StatusWrite } from '../schemas.ts';
import { startFaultProxy, type FaultProxy } from './faultProxy.ts';

export interface StoreFixture {
  cosmos: EmbeddedCosmos;
  store: MessageStore;
  /** A raw SDK client on the same server, for planting documents the store would never write. */
  raw: CosmosClient;
  database: string;
  close(): Promise<void>;
}

/** A clock that moves 1 ms per reading, so every write gets a distinct, ordered updatedAt. */
export function steppingClock(start = Date.parse('2026-12-01T10:00:00.000Z')): () => Date {
  let t = start;
  return () => new Date((t += 1));
}

/** An SDK client straight on the embedded server (no endpoint discovery: the server's address is the only one). */
function rawClient(cosmos: EmbeddedCosmos): CosmosClient {
  return new CosmosClient({ endpoint: cosmos.endpoint, key: cosmos.key, connectionPolicy: { enableEndpointDiscovery: false } });
}

export async function startStoreFixture(options: { now?: () => Date } = {}): Promise<StoreFixture> {
  const cosmos = await startEmbeddedCosmos({ port: 0 });
  const database = `t-${randomUUID().slice(0, 8)}`;
  const store = await createStore({
    endpoint: cosmos.endpoint,
    key: cosmos.key,
    database,
    now: options.now ?? steppingClock(),
  });
  const raw = rawClient(cosmos);
  return {
    cosmos,
    store,
    raw,
    database,
    close: async () => {
      await store.close();
      raw.dispose();
      await cosmos.close();
    },
  };
}

/** The embedded Cosmos server behind a fault proxy, for faults injected or requests held at the wire. */
export interface ProxiedStoreFixture {
  cosmos: EmbeddedCosmos;
  proxy: FaultProxy;
  /** A fresh database. */
  database: string;
  /** A store on `database` with a stepping clock, reaching the server as `storeVia` says. */
  store: MessageStore;
  /** Another store on `database`, through the proxy: a test's own, with the options it tests. The test closes it. */
  openThroughProxy(options?: Omit<StoreOptions, 'endpoint' | 'key' | 'database'>): Promise<MessageStore>;
  /** A raw SDK client on the server, past the proxy: for reading what landed and planting documents. */
  raw: CosmosClient;
  /**
   * Another store on `database`, on the server through `raw`: for a writer the test abandons without closing (a
   * killed process). Sharing `raw`, it leaves no client of its own behind; close() disposes of it.
   */
  openOnServer(options?: Omit<StoreOptions, 'endpoint' | 'key' | 'database' | 'client'>): Promise<MessageStore>;
  close(): Promise<void>;
}

/**
 * `storeVia: 'server'` gives a store that reads the truth past the proxy (what landed, whatever the client was
 * told); `'proxy'` one that meets the faults itself.
 */
export async function startProxiedStoreFixture(options: { storeVia: 'proxy' | 'server' }): Promise<ProxiedStoreFixture> {
  const cosmos = await startEmbeddedCosmos({ port: 0 });
  const proxy = await startFaultProxy(cosmos.endpoint);
  const database = `t-${randomUUID().slice(0, 8)}`;
  const endpoint = options.storeVia === 'proxy' ? proxy.endpoint : cosmos.endpoint;
  const store = await createStore({ endpoint, key: cosmos.key, database, now: steppingClock() });
  const raw = rawClient(cosmos);
  return {
    cosmos,
    proxy,
    database,
    store,
    openThroughProxy: (over = {}) => createStore({ endpoint: proxy.endpoint, key: cosmos.key, database, ...over }),
    raw,
    openOnServer: (over = {}) => createStore({ client: raw, endpoint: cosmos.endpoint, key: cosmos.key, database, ...over }),
    close: async () => {
      await store.close();
      raw.dispose();
      await proxy.close();
      await cosmos.close();
    },
  };
}

/** A status write as the Resolver would project it; ids default to fresh ones. */
export function msg(
  messageType: MessageType,
  over: Partial<StatusWrite> & { endpointId: string; eventId: string },
): StatusWrite {
  return {
    sessionId: 's-1',
    messageId: randomUUID(),
    messageType,
    eventTypeId: 'OrderPlaced',
    parentMessageId: SELF,
    enqueuedAt: new Date().toISOString(),
    ...over,
  };
}

/** A fixed instant `s` seconds after 2026-12-01 09:00 UTC, ISO: history tests place entries in time by it. */
export const at = (s: number): string => new Date(Date.parse('2026-12-01T09:00:00.000Z') + s * 1000).toISOString();

export const uniq = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;
