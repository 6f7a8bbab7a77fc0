// The largest message the console sends on an agent's or an operator's behalf (a handoff settlement's command, a
// resubmit's, an agent's publish), checked before anything is claimed or sent. Service Bus refuses a larger one
// (MessageSizeExceeded), and answered 503 "try again" after that refusal, an agent's client retried it for ever -
// each settlement attempt writing a claim, its undo and a CommandNotSent entry into the event's history. Too large is
// answered 413 instead, which no client retries.
//
// The limit is the broker's per-message size less 16 KB of headroom for what the message carries beside its body
// (AMQP header and properties, the application properties the contract sets). The broker's size is read once, when
// the console opens its connections, from the Manager topic's maxMessageSizeInKilobytes (readBrokerMessageBytes): a
// Premium namespace reports what it was given (1 MB to 100 MB). When it cannot be read - no Manage right, a broker that
// does not report it - it is Service Bus's Standard tier's 256 KB (the embedded emulator's default), and a broker
// that refuses a smaller message for its size is answered 413 too (isSizeRefusal).
import { isServiceBusError, type ServiceBusAdministrationClient } from '@azure/service-bus';
import { z } from 'zod';
import { HttpError } from './http.ts';

/** Service Bus's message size limit on the Standard tier, and the emulator's default. */
export const BROKER_MESSAGE_BYTES = 256 * 1024;
/** Room left for what a message carries beside its body. */
const HEADROOM_BYTES = 16 * 1024;
/** The largest body the console sends for a broker that takes messages of `brokerBytes`. */
export const sendableBodyBytes = (brokerBytes: number): number => brokerBytes - HEADROOM_BYTES;
/** The largest body the console sends on the Standard tier: BROKER_MESSAGE_BYTES less room for headers and properties. */
export const MAX_SENT_BODY_BYTES = sendableBodyBytes(BROKER_MESSAGE_BYTES);

/** 413 for a body of `bytes` over the limit (`what`: the settlement's result, the event's payload). */
export function tooLarge(what: string, bytes: number, brokerBytes = BROKER_MESSAGE_BYTES): HttpError {
  return new HttpError(
    413,
    'too large',
    `${what} is ${bytes} bytes as sent; at most ${sendableBodyBytes(brokerBytes)} bytes are (Service Bus's ${brokerBytes / 1024} KB message limit, less 16 KB for the message's headers and properties); nothing was sent - send a smaller one, e.g. a reference to where the data is`,
  );
}

/** Throws tooLarge when `bytes` is over the limit of a broker taking `brokerBytes` (default: the Standard tier's). */
export function requireSendableSize(what: string, bytes: number, brokerBytes = BROKER_MESSAGE_BYTES): void {
  if (bytes > sendableBodyBytes(brokerBytes)) throw tooLarge(what, bytes, brokerBytes);
}

/** A topic's size limit as Service Bus allows it: 256 KB (Standard) up to 100 MB (Premium). */
const topicLimit = z.object({ maxMessageSizeInKilobytes: z.number().int().min(256).max(100 * 1024) });

/** How long the read may take before the Standard limit is used (the console's start must not wait on it long). */
export const LIMIT_READ_TIMEOUT_MS = 5_000;

/**
 * The broker's per-message size for `topic`, in bytes, read from its maxMessageSizeInKilobytes (needs the Manage
 * right); BROKER_MESSAGE_BYTES when it cannot be read or is not reported. Never rejects. Logs once either way -
 * the topic and the limit, or why it was not read (the error's name and code, never its text, which may carry the
 * namespace's address).
 */
export async function readBrokerMessageBytes(
  admin: Pick<ServiceBusAdministrationClient, 'getTopic'>,
  topic: string,
  logger: { info(o: object, m: string): void; warn(o: object, m: string): void },
  timeoutMs = LIMIT_READ_TIMEOUT_MS,
): Promise<number> {
  let reason: Record<string, unknown>;
  try {
    const read = topicLimit.safeParse(await admin.getTopic(topic, { abortSignal: AbortSignal.timeout(timeoutMs) }));
    if (read.success) {
      logger.info({ topic, maxMessageSizeInKilobytes: read.data.maxMessageSizeInKilobytes }, "broker message size limit read from the topic");
      return read.data.maxMessageSizeInKilobytes * 1024;
    }
    reason = { reason: 'the topic reports no usable maxMessageSizeInKilobytes' };
  } catch (err) {
    const e = err as { name?: unknown; code?: unknown; statusCode?: unknown };
    reason = { reason: 'the topic could not be read (no Manage right?)', errName: String(e?.name ?? 'Error'), code: e?.code, statusCode: e?.statusCode };
  }
  logger.warn({ topic, ...reason, maxMessageSizeInKilobytes: BROKER_MESSAGE_BYTES / 1024 }, "broker message size limit not read: using the Standard tier's");
  return BROKER_MESSAGE_BYTES;
}

/** The broker refused a message for its size (nothing was enqueued). */
export const isSizeRefusal = (err: unknown): boolean => isServiceBusError(err) && err.code === 'MessageSizeExceeded';
