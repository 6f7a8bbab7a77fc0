// The journal's record shapes. A snapshot is written with the same records, so loading is one replay path.
// Messages travel as base64 of rhea's AMQP encoding, so every field round-trips exactly.

import type { EntityTimes, RuleDescription, SubscriptionDescription, TopicDescription } from './api.ts';
import type { QueueKind } from './model.ts';

export type JournalRecord =
  | { k: 'gen'; g: number }
  | {
      k: 'topic';
      d: TopicDescription & EntityTimes;
      /** a queue (its store is subscription '$queue') */ queue?: true;
    }
  | { k: 'deltopic'; t: string }
  | { k: 'sub'; d: SubscriptionDescription & EntityTimes }
  | { k: 'delsub'; t: string; s: string }
  | { k: 'rule'; t: string; s: string; d: RuleDescription; c: number }
  | { k: 'delrule'; t: string; s: string; r: string }
  | {
      k: 'put';
      t: string;
      s: string;
      q: QueueKind;
      seq: number;
      m: string;
      sz: number;
      et: number;
      dc: number;
      st: 'a' | 'd';
      exp: number | null;
      dls?: string;
      set?: number;
    }
  | { k: 'del'; t: string; s: string; q: QueueKind; seq: number }
  | { k: 'dc'; t: string; s: string; q: QueueKind; seq: number; dc: number }
  | { k: 'lk'; t: string; s: string; q: QueueKind; seqs: number[] }
  | { k: 'ctr'; t: string; s?: string; v: number }
  | { k: 'sch'; t: string; seq: number; m: string; sz: number; at: number }
  | { k: 'unsch'; t: string; seq: number }
  | { k: 'ss'; t: string; s: string; id: string; v: string | null }
  /** duplicate detection: entity `t` accepted MessageId `id` at `at` as sequence number `seq` */
  | { k: 'dd'; t: string; id: string; at: number; seq: number };

/** JSON with Dates kept as Dates (rule parameters may hold them). */
export function stringifyRecord(r: JournalRecord): string {
  return JSON.stringify(r, function (this: Record<string, unknown>, key: string, value: unknown) {
    const original = this[key];
    return original instanceof Date ? { $date: original.getTime() } : value;
  });
}

export function parseRecord(line: string): JournalRecord {
  return JSON.parse(line, (_key, value: unknown) => {
    if (value && typeof value === 'object' && '$date' in value) {
      return new Date((value as { $date: number }).$date);
    }
    return value;
  }) as JournalRecord;
}
