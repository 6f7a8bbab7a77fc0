// One receiver attached by the client to a subscription (or its dead-letter queues): moves messages from a
// broker Receiver to the AMQP link exactly as far as the client's link credit allows, and turns the client's
// dispositions into broker settlements, always answering with a settled disposition.

import rhea from 'rhea';
import type { Message } from 'rhea';
import type { Broker, Disposition, ReceiveSource, Receiver } from '../broker/api.ts';
import { describeSource, lockTokenToTag, outcome, tagToLockToken, toOutgoingMessage } from './codec.ts';
import { amqpConditionFor } from './errors.ts';
import type { AmqpErrorFields, RheaDelivery, RheaLink } from './rhea-types.ts';
import type { PlaneLog } from './log.ts';
import type { DispositionHold } from './disposition-hold.ts';

/** Outcome of a delivery as the client reported it (rhea's decoded outcome). */
interface RemoteOutcome {
  error?: AmqpErrorFields;
  undeliverable_here?: boolean;
  delivery_failed?: boolean;
  message_annotations?: Record<string, unknown>;
}

interface OutgoingInternals {
  outgoing: { next_delivery_id: number; next_pending_delivery: number; available(): number };
}

interface LinkInternals {
  _draining?: boolean;
  connection: { _register(): void };
}

export class DeliveryLink {
  private readonly lockTokens = new WeakMap<RheaDelivery, string>();
  private pumpScheduled = false;
  private disposed = false;
  private readonly peekLock: boolean;

  constructor(
    private readonly broker: Broker,
    readonly link: RheaLink,
    readonly source: ReceiveSource,
    /** The broker's receiver: a $management request naming this link speaks for it. */
    readonly receiver: Receiver,
    private readonly log: PlaneLog,
    /** Bytes the connection's budget leaves for output; the plane pumps again when the socket drains. */
    private readonly outgoingRoom: () => number = () => Infinity,
    /** Tests only: while it holds, the client's dispositions are neither applied nor answered. */
    private readonly dispositionHold?: DispositionHold,
  ) {
    this.peekLock = link.local.attach.snd_settle_mode !== 1;
    answerEveryDrain(link);
    receiver.onAvailable(() => this.schedulePump());
    receiver.onClosedByBroker((err) => {
      if (this.disposed) return;
      this.log.info({ entity: describeSource(source), condition: err.code }, 'receiver closed by broker');
      this.dispose();
      if (!link.is_closed()) link.close(amqpConditionFor(err, describeSource(source)));
    });
  }

  get sessionId(): string | undefined {
    return this.receiver.sessionId;
  }

  /** Deliveries are sent from a macrotask so that rhea has processed earlier transfers and credit is exact. */
  schedulePump(): void {
    if (this.pumpScheduled || this.disposed) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      try {
        this.pump();
      } catch (err) {
        this.log.error(
          { err: errorSummary(err), entity: describeSource(this.source) },
          'delivery pump failed',
        );
      }
    });
  }

  private pump(): void {
    if (this.disposed || !this.link.is_open()) return;
    const session = this.link.session as unknown as OutgoingInternals;
    const unsent = session.outgoing.next_delivery_id - session.outgoing.next_pending_delivery;
    const room = Math.min(this.link.credit - unsent, session.outgoing.available());
    const internals = this.link as unknown as LinkInternals;
    const roomBytes = this.outgoingRoom();
    if (room > 0 && roomBytes > 0) {
      // As many as credit allows, up to 100, and no more than the budget holds at the largest message size
      // (always at least one, so the budget is exceeded by one message at most).
      const byBytes = Math.max(1, Math.floor(roomBytes / this.broker.maxMessageSizeBytes));
      const batch = this.receiver.take(Math.min(room, 100, byBytes));
      for (const d of batch) {
        const msg: Message = toOutgoingMessage(d, this.peekLock);
        const tag = d.lockToken ? lockTokenToTag(d.lockToken) : rhea.string_to_uuid(rhea.generate_uuid());
        const delivery = this.link.send(msg, tag);
        if (d.lockToken) this.lockTokens.set(delivery, d.lockToken);
      }
      if (batch.length > 0) {
        // More may be waiting: look again once these transfers have consumed their credit.
        this.schedulePump();
        return;
      }
    }
    if (internals._draining && unsent === 0 && this.link.set_drained) {
      // Nothing more to give: complete the drain so the client's receiveMessages() returns promptly.
      this.link.set_drained(true);
      internals.connection._register();
    }
  }

  /** The client settled (or updated) a delivery on this link. */
  onOutcome(delivery: RheaDelivery, kind: 'accepted' | 'rejected' | 'modified' | 'released'): void {
    if (delivery.settled) return;
    // Left unsettled on both sides: the client waits for an answer that never comes, and the message's lock lapses
    // (or goes with its session) as if the disposition had been lost on the way.
    if (this.dispositionHold?.takes()) return;
    const lockToken = this.lockTokens.get(delivery) ?? safeTagToken(delivery.tag);
    const remote = (delivery.remote_state ?? {}) as RemoteOutcome;
    let disposition: Disposition;
    switch (kind) {
      case 'accepted':
        disposition = { kind: 'complete' };
        break;
      case 'released':
        disposition = { kind: 'abandon' };
        break;
      case 'modified':
        disposition = remote.undeliverable_here
          ? { kind: 'defer', propertiesToModify: remote.message_annotations ?? undefined }
          : { kind: 'abandon', propertiesToModify: remote.message_annotations ?? undefined };
        break;
      case 'rejected': {
        const info = { ...(remote.error?.info ?? {}) } as Record<string, unknown>;
        const reason = typeof info.DeadLetterReason === 'string' ? info.DeadLetterReason : undefined;
        const description =
          typeof info.DeadLetterErrorDescription === 'string' ? info.DeadLetterErrorDescription : undefined;
        delete info.DeadLetterReason;
        delete info.DeadLetterErrorDescription;
        const props = Object.fromEntries(
          Object.entries(info).filter(([, v]) => v !== undefined && v !== null),
        );
        disposition = {
          kind: 'deadLetter',
          reason,
          description,
          propertiesToModify: Object.keys(props).length ? props : undefined,
        };
        break;
      }
    }
    let reply: unknown;
    if (!lockToken || !this.peekLock) {
      reply = outcome.rejected({
        condition: 'amqp:not-allowed',
        description: 'This delivery cannot be settled.',
      });
    } else {
      try {
        this.broker.settle(this.source, lockToken, disposition, this.receiver.sessionId);
        reply = successOutcome(disposition);
      } catch (err) {
        reply = outcome.rejected(amqpConditionFor(err, describeSource(this.source)));
      }
    }
    // Answer settled and mark the delivery remotely settled too: the client never sends a second
    // disposition, and rhea only frees deliveries that both sides settled.
    delivery.update(true, reply);
    delivery.remote_settled = true;
    this.schedulePump();
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    try {
      this.receiver.close();
    } catch (err) {
      this.log.warn(
        { err: errorSummary(err), entity: describeSource(this.source) },
        'closing receiver failed',
      );
    }
  }
}

interface DrainInternals {
  _draining: boolean;
  _drained: boolean;
  credit: number;
  delivery_count: number;
  _get_drain(): boolean;
}

/**
 * rhea's sender echoes a drain only while credit is left. When our transfers used up the credit while the
 * client's drain request was in flight, the client still waits for a flow with drain=true and, after
 * 200 ms, closes the link (fatal for a session receiver). This link answers every drain, once.
 */
function answerEveryDrain(link: RheaLink): void {
  const l = link as unknown as DrainInternals;
  l._get_drain = function (this: DrainInternals): boolean {
    if (!this._draining || !this._drained) return false;
    this.delivery_count += this.credit;
    this.credit = 0;
    this._draining = false;
    return true;
  };
}

function successOutcome(d: Disposition): unknown {
  switch (d.kind) {
    case 'complete':
      return outcome.accepted();
    case 'abandon':
      return outcome.modified({ undeliverable_here: false });
    case 'defer':
      return outcome.modified({ undeliverable_here: true });
    case 'deadLetter':
      return outcome.rejected();
  }
}

function safeTagToken(tag: Buffer | string): string | undefined {
  try {
    return tagToLockToken(tag);
  } catch {
    return undefined;
  }
}

export function errorSummary(err: unknown): { name?: string; message: string } {
  if (err instanceof Error) return { name: err.name, message: err.message };
  return { message: String(err) };
}
