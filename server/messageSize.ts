// The largest message the console sends on an agent's behalf (a handoff settlement's command, an agent's publish),
// checked before anything is claimed or sent. Service Bus refuses a larger one (MessageSizeExceeded), and answered
// 503 "try again" after that refusal, an agent's client retried it for ever - each settlement attempt writing a
// claim, its undo and a CommandNotSent entry into the event's history. Too large is answered 413 instead, which no
// client retries.
//
// The limit is Service Bus's Standard tier's (and the embedded emulator's default) 256 KB per message, less 16 KB of
// headroom for what the message carries beside its body (AMQP header and properties, the application properties the
// contract sets). The console does not ask the broker for its limit before each send (a Premium namespace may allow
// more): a broker that refuses a smaller message for its size is answered 413 too (isSizeRefusal).
import { isServiceBusError } from '@azure/service-bus';
import { HttpError } from './http.ts';

/** Service Bus's message size limit on the Standard tier, and the emulator's default. */
export const BROKER_MESSAGE_BYTES = 256 * 1024;
/** The largest body the console sends for an agent: BROKER_MESSAGE_BYTES less room for headers and properties. */
export const MAX_SENT_BODY_BYTES = BROKER_MESSAGE_BYTES - 16 * 1024;

/** 413 for a body of `bytes` over MAX_SENT_BODY_BYTES (`what`: the settlement's result, the event's payload). */
export function tooLarge(what: string, bytes: number): HttpError {
  return new HttpError(
    413,
    'too large',
    `${what} is ${bytes} bytes as sent; at most ${MAX_SENT_BODY_BYTES} bytes are (Service Bus's ${BROKER_MESSAGE_BYTES / 1024} KB message limit, less 16 KB for the message's headers and properties); nothing was sent - send a smaller one, e.g. a reference to where the data is`,
  );
}

/** Throws tooLarge when `bytes` is over the limit. */
export function requireSendableSize(what: string, bytes: number): void {
  if (bytes > MAX_SENT_BODY_BYTES) throw tooLarge(what, bytes);
}

/** The broker refused a message for its size (nothing was enqueued). */
export const isSizeRefusal = (err: unknown): boolean => isServiceBusError(err) && err.code === 'MessageSizeExceeded';
