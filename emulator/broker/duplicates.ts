// Duplicate detection (RequiresDuplicateDetection), as Azure Service Bus documents it: an entity (topic or
// queue) remembers the MessageId of every message it accepted for DuplicateDetectionHistoryTimeWindow; a
// message that repeats one of them is reported to its sender as accepted and dropped. Only the MessageId
// counts (with partitioning, MessageId and PartitionKey), scheduled messages are recorded when they are
// scheduled, and forwarded messages are checked by the entity they are forwarded into.
//
// Entities without detection never reach this file: their send path costs one boolean check. The history is
// journaled ('dd' records) and kept in snapshots while it is inside the window, so a retry after a restart
// with a data directory is still recognised.

import { BrokerError } from './api.ts';
import type { WireMessage } from './api.ts';
import type { BrokerCore } from './core.ts';
import type { TopicState } from './model.ts';
import { messageIdForLog, partitionKeyOf } from './wire.ts';

/** Azure's bounds for DuplicateDetectionHistoryTimeWindow (the default is 10 minutes). */
export const MIN_DUPLICATE_WINDOW_MS = 20_000;
export const MAX_DUPLICATE_WINDOW_MS = 7 * 24 * 3_600_000;

/** Refuses a window outside Azure's bounds, with the wording of Azure's own clients. */
export function checkDuplicateWindow(ms: number | undefined): void {
  if (ms === undefined) return;
  if (typeof ms !== 'number' || !(ms >= MIN_DUPLICATE_WINDOW_MS && ms <= MAX_DUPLICATE_WINDOW_MS)) {
    throw new BrokerError(
      'BadRequest',
      'The value supplied for DuplicateDetectionHistoryTimeWindow must be between 00:00:20 and 7.00:00:00 (20 seconds to 7 days).',
    );
  }
}

/** Azure fixes RequiresDuplicateDetection when the entity is created. */
export function checkDuplicateFlagUnchanged(
  topic: TopicState,
  requested: boolean | undefined,
  kind: 'topic' | 'queue',
): void {
  if (requested !== undefined && requested !== topic.desc.requiresDuplicateDetection) {
    throw new BrokerError(
      'BadRequest',
      `The RequiresDuplicateDetection property of an existing ${kind} cannot be changed.`,
    );
  }
}

interface Seen {
  at: number;
  /** The sequence number the accepted message got (returned for a scheduled duplicate). */
  seq: number;
}

/**
 * The MessageIds one entity accepted, oldest first. Entries are appended in time order, so expiring them is
 * a walk from the front that stops at the first live one.
 */
export class DuplicateHistory {
  private readonly seen = new Map<string, Seen>();

  get size(): number {
    return this.seen.size;
  }

  /** The accepted message `key` repeats, if it was accepted less than `windowMs` before `now`. */
  find(key: string, now: number, windowMs: number): Seen | undefined {
    const s = this.seen.get(key);
    return s !== undefined && s.at + windowMs > now ? s : undefined;
  }

  record(key: string, at: number, seq: number): void {
    // Re-inserted (not updated in place) so the Map stays in time order.
    this.seen.delete(key);
    this.seen.set(key, { at, seq });
  }

  /** Forgets `key` if it is still the entry recorded under `seq`. */
  forget(key: string, seq: number): void {
    if (this.seen.get(key)?.seq === seq) this.seen.delete(key);
  }

  /** Forgets every entry that left the window. */
  prune(now: number, windowMs: number): void {
    for (const [key, s] of this.seen) {
      if (s.at + windowMs > now) break;
      this.seen.delete(key);
    }
  }

  entries(): IterableIterator<[string, Seen]> {
    return this.seen.entries();
  }
}

/** What identifies a message for duplicate detection: its MessageId, plus PartitionKey on partitioned entities. */
export function duplicateKey(topic: TopicState, m: WireMessage): string | undefined {
  const id = messageIdForLog(m);
  if (id === undefined) return undefined;
  if (!topic.desc.enablePartitioning) return id;
  const pk = partitionKeyOf(m);
  return pk === undefined ? id : `${pk}\u0000${id}`;
}

export class DuplicateDetection {
  constructor(private readonly c: BrokerCore) {}

  /**
   * For an entity with detection on: records `m` under `seq` and answers undefined, or, when `m` repeats a
   * MessageId the entity accepted within its window, answers the sequence number of that message (the caller
   * drops `m`).
   */
  repeats(topic: TopicState, m: WireMessage, seq: number, now: number): number | undefined {
    const key = duplicateKey(topic, m);
    if (key === undefined) return undefined; // the broker gives every message an id before this
    const windowMs = topic.desc.duplicateDetectionHistoryTimeWindowMs;
    const history = (topic.duplicates ??= new DuplicateHistory());
    history.prune(now, windowMs);
    const earlier = history.find(key, now, windowMs);
    if (earlier) {
      this.c.log.debug(
        { entity: topic.desc.name, messageId: messageIdForLog(m), acceptedAt: earlier.at },
        'duplicate message dropped',
      );
      return earlier.seq;
    }
    history.record(key, now, seq);
    this.c.append({ k: 'dd', t: topic.desc.name, id: key, at: now, seq });
    // A send that does not reach the disk is retried: its MessageId must not make the retry a duplicate.
    this.c.onUndo(() => history.forget(key, seq));
    return undefined;
  }

  /** Periodic: lets idle entities forget what left their window. */
  prune(topic: TopicState, now: number): void {
    topic.duplicates?.prune(now, topic.desc.duplicateDetectionHistoryTimeWindowMs);
  }

  /** Loads persisted entries (any order), keeping those still inside the window. */
  restore(topic: TopicState, entries: Array<{ id: string; at: number; seq: number }>): void {
    const now = this.c.now();
    const windowMs = topic.desc.duplicateDetectionHistoryTimeWindowMs;
    const history = (topic.duplicates ??= new DuplicateHistory());
    for (const e of [...entries].sort((a, b) => a.at - b.at)) {
      if (e.at + windowMs > now) history.record(e.id, e.at, e.seq);
    }
  }
}
