// Whether a failed send certainly did not reach the broker. Only then may a replay forget its claim and try
// again later; any other failure (a timeout, a dropped connection, an unknown error) may have happened after
// the broker accepted the copy, so the dead letter is left `sending` = uncertain for an operator to decide.
import { isServiceBusError } from '@azure/service-bus';

/** Broker answers that refuse the message: nothing was enqueued. */
const REFUSED = new Set(['MessagingEntityNotFound', 'MessagingEntityDisabled', 'MessageSizeExceeded', 'QuotaExceeded', 'UnauthorizedAccess', 'ServiceBusy']);

export function sendCertainlyRefused(err: unknown): boolean {
  if (isServiceBusError(err)) return REFUSED.has(err.code);
  // The client validates a message before anything goes on the wire and throws these for a bad one.
  return err instanceof TypeError || err instanceof RangeError;
}
