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
import { toServiceBusMessage } from './transport.ts';
import { withSendSpan, withSettleSpan } from './tracing.ts';

export class SessionStateCache {
  private cached: SessionState | undefined;
  private readonly receiver: ServiceBusSessionReceiver;
  constructor(receiver: ServiceBusSessionReceiver) {
    this.receiver = receiver;
  }

  async read(): Promise<SessionState> {
    if (this.cached) return this.cached;
    const state = decodeSessionState(await this.receiver.getSessionState());
    this.cached = state;
    return state;
  }

  async write(state: SessionState): Promise<void> {
    // Forget first: if the write fails we do not know what the broker holds.
    this.cached = undefined;
    await this.receiver.setSessionState(Buffer.from(encodeSessionState(state)));
    this.cached = state;
  }
}

export function sessionDeliveryPort(
  receiver: ServiceBusSessionReceiver,
  sender: ServiceBusSender,
  state: SessionStateCache,
  message: ServiceBusReceivedMessage,
  now: () => Date = () => new Date(),
): DeliveryPort {
  // The main subscription is named after the endpoint, whose topic the sender writes to.
  const where = { topic: sender.entityPath, subscription: sender.entityPath };
  return {
    readState: () => state.read(),
    writeState: (s) => state.write(s),
    send: async (m) => {
      const out = toServiceBusMessage(m);
      await withSendSpan(where.topic, out, () => sender.sendMessages(out));
    },
    schedule: async (m, delayMs) => {
      const out = toServiceBusMessage(m);
      await withSendSpan(where.topic, out, () => sender.scheduleMessages(out, new Date(now().getTime() + delayMs)));
    },
    complete: () => withSettleSpan('complete', where, () => receiver.completeMessage(message)),
    // The client keeps sessionLockedUntilUtc current through its automatic renewals.
    lockLost: () =>
      receiver.isClosed ||
      (receiver.sessionLockedUntilUtc !== undefined &&
        receiver.sessionLockedUntilUtc.getTime() <= now().getTime()),
    deadLetter: (reason, description) =>
      withSettleSpan('dead_letter', where, () =>
        receiver.deadLetterMessage(message, {
          deadLetterReason: reason,
          deadLetterErrorDescription: description,
        }),
      ),
  };
}
