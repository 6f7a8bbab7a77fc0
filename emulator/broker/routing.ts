// Routing and forwarding: a sent (or due scheduled) message goes through an entity's subscriptions' rules and
// actions into their main queues, or on to their ForwardTo entity (a topic or a queue), bounded by
// MAX_FORWARD_HOPS; forwarding failures land in the transfer dead-letter queue with Azure's reasons. A queue
// is routed as an entity with one subscription that takes every message.

import { MAX_DURATION_MS } from './api.ts';
import type { WireMessage } from './api.ts';
import type { BrokerCore } from './core.ts';
import { messageView } from './message-view.ts';
import type { SystemFacts } from './message-view.ts';
import type { QueueKind, StoredMessage, SubscriptionState, TopicState } from './model.ts';
import { copyMessage, headerTtl, messageIdForLog, sessionIdOf } from './wire.ts';

/** Azure ends a forwarding chain after this many hops. */
export const MAX_FORWARD_HOPS = 4;

export interface RouteWork {
  topic: TopicState;
  /** The sequence number reserved when the message was scheduled; otherwise the entity assigns one. */
  reservedSeq?: number;
  message: WireMessage;
  size: number;
  hops: number;
  scheduledEnqueueTime?: number;
  deadLetterSource?: string;
}

export class Routing {
  constructor(private readonly c: BrokerCore) {}

  /** Routes one message through an entity's subscriptions, following forwards iteratively (bounded by hops). */
  route(first: RouteWork): void {
    const work: RouteWork[] = [first];
    for (let w = work.shift(); w; w = work.shift()) {
      // Every subscription's first copy carries the topic's number for this message; extra copies get new ones.
      const topic = w.topic;
      const baseSeq = w.reservedSeq ?? ++topic.seq;
      // A forwarded message is a send into its target: one with duplicate detection drops a repeated MessageId.
      // Only the MessageId counts, so two subscriptions forwarding copies of one message into it deliver it
      // once. Sends and scheduled messages were checked by the broker when they were accepted.
      if (
        w.hops > 0 &&
        topic.desc.requiresDuplicateDetection &&
        this.c.duplicates.repeats(topic, w.message, baseSeq, this.c.now()) !== undefined
      ) {
        continue;
      }
      for (const sub of topic.subs.values()) {
        if (sub.desc.status === 'Disabled' && !topic.isQueue) continue;
        let baseUsed = false;
        const seqFor = (): number => {
          if (baseUsed) return ++topic.seq;
          baseUsed = true;
          return baseSeq;
        };
        const { copies, failure } = topic.isQueue
          ? { copies: [copyMessage(w.message)] }
          : this.matchCopies(sub, w);
        if (failure && copies.length === 0 && sub.desc.deadLetteringOnFilterEvaluationExceptions) {
          const copy = copyMessage(w.message);
          this.storeNew(sub, 'deadLetter', seqFor(), copy, w, {
            reason: 'FilterEvaluationException',
            description: failure,
          });
        }
        for (const copy of copies) {
          const target = sub.desc.forwardTo;
          if (!target) {
            this.storeNew(sub, 'main', seqFor(), copy, w);
            continue;
          }
          if (w.hops >= MAX_FORWARD_HOPS) {
            this.storeNew(sub, 'transferDeadLetter', seqFor(), copy, w, {
              reason: 'TransferHopCountExceeded',
              description: `The message was forwarded ${w.hops} times; the limit is ${MAX_FORWARD_HOPS}.`,
            });
            continue;
          }
          const next = this.c.topics.get(target);
          if (!next) {
            this.storeNew(sub, 'transferDeadLetter', seqFor(), copy, w, {
              reason: 'ForwardToEntityNotFound',
              description: `The forward target '${target}' of '${sub.path}' does not exist.`,
            });
            continue;
          }
          if (!acceptsForward(next)) {
            this.storeNew(sub, 'transferDeadLetter', seqFor(), copy, w, {
              reason: 'ForwardToEntityDisabled',
              description: `The forward target '${target}' of '${sub.path}' is disabled for send.`,
            });
            continue;
          }
          next.times.accessedAt = this.c.now();
          const forwarded: RouteWork = { ...w, topic: next, message: copy, hops: w.hops + 1 };
          delete forwarded.reservedSeq;
          work.push(forwarded);
        }
      }
    }
  }

  /** Sends a dead-lettered message on to ForwardDeadLetteredMessagesTo; false when it stays in the DLQ. */
  forwardDeadLetter(sub: SubscriptionState, message: WireMessage, size: number): boolean {
    const forward = sub.desc.forwardDeadLetteredMessagesTo;
    const target = forward ? this.c.topics.get(forward) : undefined;
    if (!target || !acceptsForward(target)) return false;
    this.route({ topic: target, message, size, hops: 1, deadLetterSource: sub.path });
    return true;
  }

  /**
   * The copies a subscription keeps of one message: one per matching rule that has an action (each with that
   * action applied), plus one if any matching rule has no action.
   */
  private matchCopies(sub: SubscriptionState, w: RouteWork): { copies: WireMessage[]; failure?: string } {
    const facts: SystemFacts = { enqueuedTime: this.c.now(), size: w.size };
    if (w.scheduledEnqueueTime !== undefined) facts.scheduledEnqueueTime = w.scheduledEnqueueTime;
    const view = messageView(w.message, facts);
    const copies: WireMessage[] = [];
    let plain = false;
    let failure: string | undefined;
    for (const rule of sub.rules.values()) {
      let matched: boolean;
      try {
        matched = rule.matches(view);
      } catch (err) {
        failure = `Rule '${rule.description.name}': ${err instanceof Error ? err.message : String(err)}`;
        continue;
      }
      if (!matched) continue;
      if (rule.action) {
        const copy = copyMessage(w.message);
        try {
          rule.action(messageView(copy, facts));
        } catch (err) {
          failure = `Rule '${rule.description.name}' action: ${err instanceof Error ? err.message : String(err)}`;
          continue;
        }
        copies.push(copy);
      } else if (!plain) {
        plain = true;
        copies.push(copyMessage(w.message));
      }
    }
    return failure === undefined ? { copies } : { copies, failure };
  }

  private storeNew(
    sub: SubscriptionState,
    kind: QueueKind,
    seq: number,
    message: WireMessage,
    w: RouteWork,
    deadLetter?: { reason: string; description: string },
  ): void {
    const now = this.c.now();
    let target = kind;
    const sessionId = sessionIdOf(message);
    if (kind === 'main' && sub.desc.requiresSession && sessionId === undefined) {
      // A session entity cannot hand out a message without a session id; keep it visible in the DLQ.
      target = 'deadLetter';
      deadLetter = {
        reason: 'SessionIdIsMissing',
        description: `'${sub.path}' requires sessions and the message has no SessionId.`,
      };
    }
    if (deadLetter) {
      message.application_properties = {
        ...((message.application_properties as object | undefined) ?? {}),
        DeadLetterReason: deadLetter.reason,
        DeadLetterErrorDescription: deadLetter.description,
      };
    }
    const ttl = Math.min(
      headerTtl(message) ?? Infinity,
      sub.desc.defaultMessageTimeToLiveMs,
      sub.topic.desc.defaultMessageTimeToLiveMs,
    );
    const m: StoredMessage = {
      seq,
      message,
      size: w.size,
      enqueuedTime: now,
      deliveryCount: 0,
      state: 'active',
      expiresAt: target === 'main' && ttl < MAX_DURATION_MS ? now + ttl : Infinity,
      available: false,
      queue: sub.queue(target),
    };
    if (sessionId !== undefined) m.sessionId = sessionId;
    if (w.scheduledEnqueueTime !== undefined) m.scheduledEnqueueTime = w.scheduledEnqueueTime;
    if (w.deadLetterSource !== undefined) m.deadLetterSource = w.deadLetterSource;
    this.c.delivery.insert(m);
    this.c.journalPut(m);
    if (deadLetter) {
      this.c.log.info(
        { path: sub.path, messageId: messageIdForLog(message), bytes: w.size, reason: deadLetter.reason },
        'message dead-lettered on arrival',
      );
    }
  }
}

function acceptsForward(t: TopicState): boolean {
  return t.desc.status !== 'SendDisabled' && t.desc.status !== 'Disabled';
}
