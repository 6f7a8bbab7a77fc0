// DeliveryPort over a real session receiver and the endpoint's sender. The session state is cached while this
// receiver holds the session lock: nobody else can change it meanwhile, so one read per session suffices.
import type {
  ServiceBusReceivedMessage,
  ServiceBusSender,
  ServiceBusSessionReceiver,
} from '@azure/service-bus';
import { decodeSessionState, encodeSessionState } from './contract/index.ts';
import type { SessionState } from './contract/index.ts';
import type { DeliveryPort } from './dispatcher.ts';
import type { BoundedLink } from './boundedCall.ts';
import { toServiceBusMessage } from './transport.ts';
import { withSendSpan, withSettleSpan } from './tracing.ts';

export class SessionStateCache {
  private cached: SessionState | undefined;
  private readonly receiver: ServiceBusSessionReceiver;
  constructor(receiver: ServiceBusSessionReceiver) {
    this.receiver = receiver;
  }

  async read(abortSignal?: AbortSignal): Promise<SessionState> {
    if (this.cached) return this.cached;
    const state = decodeSessionState(await this.receiver.getSessionState(abortSignal ? { abortSignal } : {}));
    this.cached = state;
    return state;
  }

  async write(state: SessionState, abortSignal?: AbortSignal): Promise<void> {
    // Forget first: if the write fails (or is given up) we do not know what the broker holds.
    this.cached = undefined;
    await this.receiver.setSessionState(Buffer.from(encodeSessionState(state)), abortSignal ? { abortSignal } : {});
    if (!abortSignal?.aborted) this.cached = state;
  }
}

/** The completion's name as a BoundedLink reports the call that timed out (OperationTimeoutError.operation). */
export const COMPLETING_THE_MESSAGE = 'completing the message';

/** Runs one broker call of a delivery; the signal aborts when the call is given up. */
type CallRunner = <T>(what: string, call: (abortSignal: AbortSignal) => Promise<T>) => Promise<T>;

const unbounded: CallRunner = (_what, call) => call(new AbortController().signal);

export interface SessionDeliveryPortOptions {
  now?: () => Date;
  /**
   * Bounds every broker call of the delivery (BoundedLink): a call the client leaves unanswered after a dropped
   * connection then fails after the bound instead of the client's operation timeout, the delivery is left unsettled
   * (it comes back: at least once, as always), and the caller sees `link.lost` and gives the session up.
   */
  link?: BoundedLink;
  /**
   * Told of every broker call of the delivery that failed (the host's SessionLockWatch looks for SessionLockLost,
   * the broker's word that the session lock is gone, so the rest of the batch does not run its handlers).
   */
  onCallFailed?: (error: unknown) => void;
  /**
   * Whether the session lock is known lost (the host's SessionLockWatch, which reads the expiry only when the local
   * clock agreed with the broker's at accept). Default: the receiver closed, or its expiry passed by the local clock.
   */
  lockLost?: () => boolean;
}

export function sessionDeliveryPort(
  receiver: ServiceBusSessionReceiver,
  sender: ServiceBusSender,
  state: SessionStateCache,
  message: ServiceBusReceivedMessage,
  options: SessionDeliveryPortOptions = {},
): DeliveryPort {
  const now = options.now ?? (() => new Date());
  const link = options.link;
  const bounded: CallRunner = link ? (what, call) => link.run(what, call) : unbounded;
  const onCallFailed = options.onCallFailed;
  const run: CallRunner = onCallFailed
    ? (what, call) =>
        bounded(what, call).catch((error: unknown) => {
          onCallFailed(error);
          throw error;
        })
    : bounded;
  // The main subscription is named after the endpoint, whose topic the sender writes to.
  const where = { topic: sender.entityPath, subscription: sender.entityPath };
  return {
    readState: () => run('reading the session state', (abortSignal) => state.read(abortSignal)),
    writeState: (s) => run('writing the session state', (abortSignal) => state.write(s, abortSignal)),
    send: async (m) => {
      const out = toServiceBusMessage(m);
      await withSendSpan(where.topic, out, () =>
        run('sending a message', (abortSignal) => sender.sendMessages(out, { abortSignal })),
      );
    },
    schedule: async (m, delayMs) => {
      const out = toServiceBusMessage(m);
      const at = new Date(now().getTime() + delayMs);
      await withSendSpan(where.topic, out, () =>
        run('scheduling a message', (abortSignal) => sender.scheduleMessages(out, at, { abortSignal })),
      );
    },
    // Settlements take no signal: given up, they may still land (the delivery then counts as settled after all).
    complete: () =>
      withSettleSpan('complete', where, () => run(COMPLETING_THE_MESSAGE, () => receiver.completeMessage(message))),
    // A call given up after the bound: the connection, not the handler, is what failed.
    linkLost: () => link?.lost ?? false,
    // The client keeps sessionLockedUntilUtc current through its automatic renewals.
    lockLost:
      options.lockLost ??
      (() =>
        receiver.isClosed ||
        (receiver.sessionLockedUntilUtc !== undefined &&
          receiver.sessionLockedUntilUtc.getTime() <= now().getTime())),
    deadLetter: (reason, description) =>
      withSettleSpan('dead_letter', where, () =>
        run('dead-lettering the message', () =>
          receiver.deadLetterMessage(message, {
            deadLetterReason: reason,
            deadLetterErrorDescription: description,
          }),
        ),
      ),
  };
}
