// A receiver handed to the AMQP plane: a thin handle over the broker's take/close, plus the listeners the
// plane registers. Availability signals are coalesced into one microtask so a burst of sends wakes a
// receiver once, and never re-enters the plane while the broker is in the middle of an operation.

import { BrokerError } from './api.ts';
import type { Delivered, ReceiveMode, Receiver } from './api.ts';
import type {
  NonSessionListener,
  QueueKind,
  SessionHolder,
  SessionState,
  SubscriptionState,
} from './model.ts';

/**
 * What a receiver asks of the broker. An interface rather than the broker class, so this module does not
 * import the broker (which creates receivers) and the two form no import cycle.
 */
export interface ReceiverHost {
  take(r: ReceiverImpl, max: number): Delivered[];
  release(r: ReceiverImpl): void;
}

export class ReceiverImpl implements Receiver, SessionHolder, NonSessionListener {
  closed = false;
  private readonly availableListeners: Array<() => void> = [];
  private readonly closedListeners: Array<(err: BrokerError) => void> = [];
  private signalPending = false;

  constructor(
    private readonly host: ReceiverHost,
    readonly sub: SubscriptionState,
    readonly kind: QueueKind,
    readonly mode: ReceiveMode,
    readonly session: SessionState | undefined,
  ) {}

  get sessionId(): string | undefined {
    return this.session?.id;
  }

  get sessionLockedUntil(): number | undefined {
    return this.session?.lockedUntil;
  }

  take(max: number): Delivered[] {
    if (!Number.isFinite(max) || max <= 0) return [];
    return this.host.take(this, Math.floor(max));
  }

  onAvailable(listener: () => void): void {
    this.availableListeners.push(listener);
  }

  onClosedByBroker(listener: (err: BrokerError) => void): void {
    this.closedListeners.push(listener);
  }

  close(): void {
    this.host.release(this);
  }

  signal(): void {
    if (this.closed || this.signalPending || this.availableListeners.length === 0) return;
    this.signalPending = true;
    queueMicrotask(() => {
      this.signalPending = false;
      if (this.closed) return;
      for (const l of this.availableListeners) l();
    });
  }

  closedByBroker(code: 'SessionLockLost' | 'EntityNotFound', message: string): void {
    if (this.closed) return;
    this.host.release(this);
    const err = new BrokerError(code, message);
    for (const l of this.closedListeners) l(err);
  }
}
