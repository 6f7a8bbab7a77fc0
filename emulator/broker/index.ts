// Public entry point of the broker core: the contract (api.ts) and the factory.

import type { Broker, BrokerOptions } from './api.ts';
import { ServiceBusBroker } from './broker.ts';
import { openPersistence } from './persistence.ts';
import type { JournalOptions } from './journal.ts';

export * from './api.ts';
export { ServiceBusBroker, MAX_FORWARD_HOPS } from './broker.ts';

/** Creates a broker; with `dataDir` it first loads the state persisted there. */
export async function createBroker(options: BrokerOptions = {}): Promise<Broker> {
  return createServiceBusBroker(options);
}

/** Same as createBroker, typed as the implementation (tests use runDueWork() with an injected clock). */
export async function createServiceBusBroker(
  options: BrokerOptions = {},
  journal: JournalOptions = {},
): Promise<ServiceBusBroker> {
  const broker = new ServiceBusBroker(options);
  if (options.dataDir) {
    try {
      await openPersistence(broker, options.dataDir, options.log, journal);
    } catch (err) {
      await broker.close();
      throw err;
    }
  }
  return broker;
}
