// Durable state: loads a data directory into the broker and attaches the journal. (Being written.)
import type { BrokerOptions } from './api.ts';
import type { ServiceBusBroker } from './broker.ts';

export async function openPersistence(
  _broker: ServiceBusBroker,
  _dataDir: string,
  _log: BrokerOptions['log'],
): Promise<void> {
  throw new Error('dataDir persistence is not implemented yet');
}
