// Test stack for the console: the embedded Service Bus emulator with the demo catalog's topology, the embedded
// Cosmos server with the store, and the environment the console reads. Real clients on both; nothing mocked.
import { loadCatalog } from '@nimbus/sdk/catalog';
import type { Catalog } from '@nimbus/sdk/contract';
import { createServiceBusClients, type ServiceBusClients } from '@nimbus/sdk/servicebus';
import { createStore, startEmbeddedCosmos, type EmbeddedCosmos, type MessageStore } from '../../lib/store/index.ts';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { startEmulator, type RunningEmulator, type StartEmulatorOptions } from '../../emulator/index.ts';
import { DEFAULT_CATALOG_PATH } from '../config.ts';

export interface ConsoleTestStack {
  emulator: RunningEmulator;
  cosmos: EmbeddedCosmos;
  serviceBus: ServiceBusClients;
  store: MessageStore;
  catalog: Catalog;
  /** The variables the console reads (DESIGN.md §7). */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** Emulator options a test may set (e.g. a smaller message size limit than the console's); the port is always a free one. */
export type TestEmulatorOptions = Omit<StartEmulatorOptions, 'port' | 'host'>;

export async function startConsoleTestStack(database = 'nimbus', emulatorOptions: TestEmulatorOptions = {}): Promise<ConsoleTestStack> {
  const emulator = await startEmulator({ ...emulatorOptions, port: 0 });
  const cosmos = await startEmbeddedCosmos({ port: 0 });
  const serviceBus = createServiceBusClients(emulator.connectionString);
  const catalog = await loadCatalog(DEFAULT_CATALOG_PATH);
  const closeAll = async () => {
    await serviceBus.close().catch(() => undefined);
    await cosmos.close().catch(() => undefined);
    await emulator.close().catch(() => undefined);
  };
  try {
    await provisionTopology(serviceBus.admin, deriveTopology(catalog), {
      subscriptionDefaults: { lockDuration: 'PT5S', maxDeliveryCount: 10 },
    });
    const store = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database });
    return {
      emulator,
      cosmos,
      serviceBus,
      store,
      catalog,
      env: {
        NIMBUS_SERVICEBUS_CONNECTION_STRING: emulator.connectionString,
        NIMBUS_COSMOS_ENDPOINT: cosmos.endpoint,
        NIMBUS_COSMOS_KEY: cosmos.key,
        NIMBUS_COSMOS_DATABASE: database,
        NIMBUS_CATALOG: DEFAULT_CATALOG_PATH,
        NIMBUS_AUTH: 'off',
      },
      close: async () => {
        await store.close().catch(() => undefined);
        await closeAll();
      },
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
