// The seam between our OutgoingMessage and the @azure/service-bus message shape.
import type { ServiceBusMessage } from '@azure/service-bus';
import type { OutgoingMessage } from './outbound.ts';

/**
 * The body goes on the wire as the UTF-8 bytes of the envelope JSON (a Buffer is sent as one data section
 * untouched; a string would be JSON-encoded a second time by the client).
 */
export function toServiceBusMessage(m: OutgoingMessage): ServiceBusMessage {
  return {
    body: Buffer.from(m.body, 'utf8'),
    contentType: 'application/json',
    messageId: m.messageId,
    // Absent rather than undefined: the client's type (under exactOptionalPropertyTypes) has no room for undefined.
    ...(m.sessionId ? { sessionId: m.sessionId } : {}),
    ...(m.correlationId === undefined ? {} : { correlationId: m.correlationId }),
    applicationProperties: { ...m.applicationProperties },
  };
}
