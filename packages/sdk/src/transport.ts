// The seam between our OutgoingMessage and the @azure/service-bus message shape.
import type { ServiceBusMessage } from '@azure/service-bus';
import type { OutgoingMessage } from './outbound.ts';

/**
 * The body goes on the wire as the UTF-8 bytes of the envelope JSON (a Buffer is sent as one data section
 * untouched; a string would be JSON-encoded a second time by the client). A carried body (a parked or replayed copy)
 * goes out as the bytes it came with, under its own content type or none.
 */
export function toServiceBusMessage(m: OutgoingMessage): ServiceBusMessage {
  const carried = typeof m.body === 'string' ? undefined : m.body;
  return {
    // A carried body with no bytes (the message came without one) goes out as no body (the client sends null, which
    // a receiver reads as null): an empty data section would be read back as an empty Buffer, "not valid JSON".
    body: carried ? (carried.bytes.length > 0 ? carried.bytes : null) : Buffer.from(m.body as string, 'utf8'),
    ...(carried
      ? carried.contentType !== undefined
        ? { contentType: carried.contentType }
        : {}
      : { contentType: 'application/json' }),
    messageId: m.messageId,
    // Absent rather than undefined: the client's type (under exactOptionalPropertyTypes) has no room for undefined.
    ...(m.sessionId ? { sessionId: m.sessionId } : {}),
    ...(m.correlationId === undefined ? {} : { correlationId: m.correlationId }),
    applicationProperties: { ...m.applicationProperties },
  };
}
