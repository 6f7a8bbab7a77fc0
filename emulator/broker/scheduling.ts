// Scheduling and expiry: scheduled messages wait at their entity (topic or queue) until due, then are routed
// with the sequence number reserved when they were scheduled; the periodic sweep expires messages whose
// time to live has passed so counts stay right without receivers (and lets duplicate detection histories
// forget what left their window).

import type { WireMessage } from './api.ts';
import type { BrokerCore } from './core.ts';
import type { ScheduledItem, StoredMessage, TopicState } from './model.ts';
import { encodeMessage } from './wire.ts';

export class Scheduling {
  constructor(private readonly c: BrokerCore) {}

  add(topic: TopicState, item: ScheduledItem): void {
    const c = this.c;
    topic.scheduled.set(item.seq, item);
    topic.scheduledBytes += item.size;
    c.storedBytes += item.size;
    if (c.journal.enabled && !c.replaying) {
      item.encoded ??= encodeMessage(item.message);
      c.append({ k: 'sch', t: topic.desc.name, seq: item.seq, m: item.encoded, sz: item.size, at: item.at });
    }
    c.scheduler.at(item.at, () => c.op(true, () => this.fire(topic, item.seq)));
    // Taken back if the send or schedule does not reach the disk; its timer then finds nothing to fire.
    c.onUndo(() => {
      if (topic.scheduled.get(item.seq) !== item) return;
      topic.scheduled.delete(item.seq);
      topic.scheduledBytes -= item.size;
      c.storedBytes -= item.size;
    });
  }

  remove(topic: TopicState, seq: number): ScheduledItem | undefined {
    const item = topic.scheduled.get(seq);
    if (!item) {
      this.dropUndecodable(topic, seq);
      return undefined;
    }
    topic.scheduled.delete(seq);
    topic.scheduledBytes -= item.size;
    this.c.storedBytes -= item.size;
    this.c.append({ k: 'unsch', t: topic.desc.name, seq });
    this.c.onUndo(() => {
      topic.scheduled.set(seq, item);
      topic.scheduledBytes += item.size;
      this.c.storedBytes += item.size;
    });
    return item;
  }

  /** A scheduled message kept undecoded since start-up (BrokerCore.undecodableScheduled): it can be cancelled. */
  isUndecodable(topic: TopicState, seq: number): boolean {
    return this.c.undecodableScheduled.some((u) => u.topic === topic && u.rec.seq === seq);
  }

  private dropUndecodable(topic: TopicState, seq: number): void {
    const list = this.c.undecodableScheduled;
    const i = list.findIndex((u) => u.topic === topic && u.rec.seq === seq);
    if (i < 0) return;
    list.splice(i, 1);
    this.c.append({ k: 'unsch', t: topic.desc.name, seq });
  }

  /** Routes one scheduled message if it is still scheduled and due (a cancelled one is simply gone). */
  fire(topic: TopicState, seq: number): void {
    const item = topic.scheduled.get(seq);
    if (topic.deleted || !item || item.at > this.c.now()) return;
    this.remove(topic, seq);
    this.c.routing.route({
      topic,
      message: item.message,
      size: item.size,
      hops: 0,
      scheduledEnqueueTime: item.at,
      reservedSeq: item.seq,
    });
  }

  /** Periodic: expire available messages whose time has passed, so counts stay right without receivers. */
  sweepExpired(): void {
    const c = this.c;
    if (c.closed) return;
    const now = c.now();
    let touched = false;
    for (const topic of c.topics.values()) {
      if (topic.duplicates) c.duplicates.prune(topic, now);
      for (const sub of topic.subs.values()) {
        if (sub.main.expiring === 0) continue;
        const due: StoredMessage[] = [];
        for (const m of sub.main.messages.values()) {
          if (m.expiresAt <= now && m.lockToken === undefined && m.state === 'active') due.push(m);
        }
        for (const m of due) {
          c.delivery.markUnavailable(m);
          c.delivery.expire(m);
          touched = true;
        }
      }
    }
    if (touched) c.flush(true);
  }
}

/** ScheduledEnqueueTimeUtc as the client sends it (a timestamp annotation), in epoch ms. */
export function scheduledTimeOf(m: WireMessage): number | undefined {
  const v: unknown = m.message_annotations?.['x-opt-scheduled-enqueue-time'];
  if (v instanceof Date) return v.getTime();
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  return undefined;
}
