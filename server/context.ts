// The console's connections, one set per process: the store (Cosmos), the Service Bus clients, the catalog and
// the Manager. Kept on globalThis because Next.js may load this module more than once (one copy per route
// bundle); every copy must share one client, not open its own.
import { isAbsolute, resolve } from 'node:path';
import { loadCatalog } from '@nimbus/sdk/catalog';
import { Topic, type Catalog } from '@nimbus/sdk/contract';
import { createServiceBusClients, type ServiceBusClients } from '@nimbus/sdk/servicebus';
import { createStore, type MessageStore } from '../lib/store/index.ts';
import { loadConsoleConfig, type ConsoleConfig } from './config.ts';
import { Manager } from './manager/manager.ts';
import { BrokerMessageSize, CommandMessageSize } from './messageSize.ts';
import { log } from './log.ts';

export interface ConsoleContext {
  config: ConsoleConfig;
  store: MessageStore;
  serviceBus: ServiceBusClients;
  catalog: Catalog;
  manager: Manager;
  /**
   * The broker's per-message size, read from the Manager topic as the context opens and again after a failed read
   * (`bytes()` never rejects and waits at most the read's bound: the Standard tier's 256 KB until it is read); what
   * commands are held to, and what stands for an endpoint topic's size until that is read (commandMessageSize).
   */
  brokerMessageSize: BrokerMessageSize;
  /**
   * Per endpoint topic, read as the Manager topic's is (on first use): a command is held to the smaller of the Manager
   * topic's size and its endpoint topic's (`bytes`), an agent's publish - sent to its endpoint's topic - to that topic's
   * (`topicBytes`); a re-send of a claim to the sizes read only, none read leaving it to the broker (`resendBytes`).
   */
  commandMessageSize: CommandMessageSize;
}

const KEY = Symbol.for('nimbus.console.context');
type Slot = { pending?: Promise<ConsoleContext> };
const slot = ((globalThis as Record<symbol, unknown>)[KEY] ??= {}) as Slot;

async function open(env: Record<string, string | undefined>): Promise<ConsoleContext> {
  const config = loadConsoleConfig(env);
  const catalogPath = isAbsolute(config.catalogPath) ? config.catalogPath : resolve(/*turbopackIgnore: true*/ process.cwd(), config.catalogPath);
  const catalog = await loadCatalog(catalogPath);
  // An interactive reader may wait a little on a throttle rather than fail the page (docs/store.md).
  const store = await createStore({ ...config.cosmos, throttleRetries: 3, requestTimeoutMs: 10_000 });
  let serviceBus: ServiceBusClients;
  try {
    serviceBus = createServiceBusClients(config.serviceBusConnection);
  } catch (err) {
    await store.close();
    throw err;
  }
  // Started, not awaited: a page that reads only the store does not wait on the broker; a command awaits it (bounded).
  const brokerMessageSize = new BrokerMessageSize(serviceBus.admin, Topic.Manager, log);
  void brokerMessageSize.bytes();
  // A command is held to the smaller of the Manager topic's size and its endpoint topic's (each read on first use),
  // and, like an agent's publish, to the Resolver topic's, which every request's copy is forwarded to.
  const resolverMessageSize = new BrokerMessageSize(serviceBus.admin, Topic.Resolver, log, { fallback: 'the other topics stand for it' });
  const commandMessageSize = new CommandMessageSize(serviceBus.admin, brokerMessageSize, log, {}, [resolverMessageSize]);
  return {
    config,
    store,
    serviceBus,
    catalog,
    brokerMessageSize,
    commandMessageSize,
    manager: new Manager({
      store,
      client: serviceBus.client,
      brokerMessageBytes: (endpointId) => commandMessageSize.bytes(endpointId),
      resendMessageBytes: (endpointId) => commandMessageSize.resendBytes(endpointId),
    }),
  };
}

/** The process's context, opened on first use from the environment. A failed open is retried on the next call. */
export function getContext(env: Record<string, string | undefined> = process.env): Promise<ConsoleContext> {
  if (!slot.pending) {
    const p = open(env);
    slot.pending = p;
    p.catch(() => {
      if (slot.pending === p) slot.pending = undefined;
    });
  }
  return slot.pending;
}

/** Closes the connections (the launcher's shutdown, the end of a test). */
export async function closeContext(): Promise<void> {
  const p = slot.pending;
  slot.pending = undefined;
  if (!p) return;
  const ctx = await p.catch(() => undefined);
  if (!ctx) return;
  // Bulk operations send through the Manager: their runner stops (releasing its leases) before the clients close.
  await (await import('./operations/service.ts')).stopOperations().catch(() => undefined);
  await ctx.manager.close().catch(() => undefined);
  await ctx.serviceBus.close().catch(() => undefined);
  await ctx.store.close().catch(() => undefined);
}
