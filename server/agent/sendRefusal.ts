// Whether a failed Agent API publish certainly sent nothing. Only then may its publish record be removed so that a
// retry sends (publish.ts). Any other failure leaves the outcome unknown: a send timed out or lost its connection
// after the broker may have taken the message (only the acknowledgement lost), and removing the record on such a
// failure sent a second copy on the agent's retry (server/agent/publishOutcome.test.ts). The topics have no
// duplicate detection, so in doubt the record stays `sending`.
import { isServiceBusError } from '@azure/service-bus';

/**
 * The broker's refusals that say the message was not enqueued: too large, no such topic, no right to send. They are
 * about the message or the entity, not the moment, and the client does not retry them; an earlier attempt of the
 * same send that timed out would have met the same refusal (short of the topic or the right going away between
 * two of the client's attempts).
 */
const REFUSED_CODES: ReadonlySet<string> = new Set(['MessageSizeExceeded', 'MessagingEntityNotFound', 'UnauthorizedAccess']);

/**
 * True when `err`, thrown by a publish, proves nothing was sent: the publisher's own validation (PublishValidationError,
 * before the send), the Service Bus client's argument checks (TypeError, raised before anything is written to the
 * link), or one of the broker's definite refusals above. Everything else - ServiceTimeout, ServiceBusy, a lost
 * connection, an abort, an unknown error - may have been delivered.
 */
export function refusedBeforeSending(err: unknown): boolean {
  if (err instanceof TypeError) return true;
  if (err instanceof Error && err.name === 'PublishValidationError') return true;
  return isServiceBusError(err) && REFUSED_CODES.has(err.code);
}
