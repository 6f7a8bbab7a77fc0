// The replay journal: one Cosmos record per dead letter a replay has touched, so a replay that dies midway
// never leads to a second copy (docs/operations.md "Replay journal"). The record is written as `sending`
// BEFORE the copy goes out, `sent` once the send resolved, `done` once the dead letter is completed. A later
// replay reads it first: `sent` → complete the dead letter without sending; `sending` → the copy may or may not
// have gone out, so nothing is sent until an operator decides (resend, or remove as delivered); `done` → its dead
// letter is gone (written only after the completion), so a dead letter in the queue under the same key is another
// one (a recreated entity reusing the sequence number and the MessageId): judged as one with no record.
//
// Every transition is conditional: the first claim is a create (fails if any record exists), the rest a
// replace If-Match the etag this process read. Two consoles replaying the same dead letter (possible once a
// slow holder's lock has expired) therefore never both send it.
import { createHash } from 'node:crypto';
import type { Container, Database } from '@azure/cosmos';
import { z } from 'zod';
import { cosmosStatus, rethrowCosmos } from '../../lib/store/index.ts';
import { openContainer, type ContainerSlot } from '../../lib/store/containers.ts';
import { deleteIfMatch } from '../../lib/store/deleteIfMatch.ts';

export const JOURNAL_CONTAINER = 'replayJournal';

export type JournalState = 'sending' | 'sent' | 'done';

/** An operator's decision on an uncertain dead letter (its record was left in `sending`). */
export type UncertainDecision = 'resend' | 'markDelivered';

const decisionSchema = z.object({
  kind: z.enum(['resend', 'markDelivered']),
  by: z.string(),
  /** The deciding operator's stable id (principalKey); absent on decisions recorded before it was. */
  byId: z.string().optional(),
  at: z.string(),
  operationId: z.string(),
  /** The claim the operator decided on: who had left it in `sending`, and when. */
  previousOperationId: z.string(),
  previousClaimedAt: z.string(),
});

export const journalRecordSchema = z.object({
  id: z.string(),
  scope: z.string(),
  topic: z.string(),
  subscription: z.string(),
  sequenceNumber: z.string(),
  messageId: z.string().nullable(),
  state: z.enum(['sending', 'sent', 'done']),
  /** The replay operation that holds the current claim, and who started it. */
  operationId: z.string(),
  auditor: z.string(),
  /** Its starter's stable id (principalKey) beside the display name; absent on records written before it was. */
  auditorId: z.string().optional(),
  claimedAt: z.string(),
  sentAt: z.string().nullable(),
  doneAt: z.string().nullable(),
  /** Set when this record's current claim comes from an operator's decision on an uncertain dead letter. */
  decision: decisionSchema.nullable().default(null),
});
export type JournalRecord = z.output<typeof journalRecordSchema>;

export interface JournalEntry {
  record: JournalRecord;
  etag: string;
}

/** The dead letter a record is about. */
export interface DeadLetterKey {
  topic: string;
  subscription: string;
  sequenceNumber: string;
  messageId: string | null;
}

/** Entity names are case-insensitive on Service Bus, so the partition is too. */
export const scopeOf = (topic: string, subscription: string) => `${topic}/${subscription}`.toLowerCase();

/**
 * The record id: the dead letter's sequence number (unique within the subscription) plus a hash of its
 * MessageId, so a recreated entity that reuses sequence numbers cannot inherit an old record.
 */
export function recordIdOf(k: Pick<DeadLetterKey, 'sequenceNumber' | 'messageId'>): string {
  const h = createHash('sha256').update(k.messageId ?? '').digest('hex').slice(0, 16);
  return `${k.sequenceNumber}-${h}`;
}

/** What a replay read about one dead letter, for the preview and the page. */
export type JournalVerdict = 'none' | 'alreadySent' | 'uncertain';

export function verdictOf(record: JournalRecord | null | undefined): JournalVerdict {
  // `done`: about a dead letter already removed, not the one in the queue under its key (the header above).
  if (!record || record.state === 'done') return 'none';
  return record.state === 'sending' ? 'uncertain' : 'alreadySent';
}

export class ReplayJournal {
  readonly #database: Database;
  readonly #slot: ContainerSlot = {};

  /** Uses the store's database (and so its client and its throttle settings); nothing of its own to close. */
  constructor(database: Database) {
    this.#database = database;
  }

  #c(): Promise<Container> {
    // Two processes opening it at once both get it; a failed open is retried on the next call (lib/store/containers.ts).
    return openContainer(this.#slot, this.#database, JOURNAL_CONTAINER, '/scope');
  }

  async get(k: DeadLetterKey): Promise<JournalEntry | null> {
    const c = await this.#c();
    const id = recordIdOf(k);
    try {
      const r = await c.item(id, scopeOf(k.topic, k.subscription)).read<Record<string, unknown>>();
      if (r.statusCode === 404 || r.resource === undefined) return null;
      return { record: journalRecordSchema.parse(r.resource), etag: r.etag ?? '' };
    } catch (err) {
      if (cosmosStatus(err) === 404) return null;
      rethrowCosmos(err, 'replay journal read');
    }
  }

  /** Records of several dead letters of one subscription (point reads; a page holds at most 100). */
  async getMany(keys: DeadLetterKey[]): Promise<Map<string, JournalEntry>> {
    const out = new Map<string, JournalEntry>();
    const found = await Promise.all(keys.map((k) => this.get(k)));
    found.forEach((e, i) => {
      if (e) out.set(keys[i]!.sequenceNumber, e);
    });
    return out;
  }

  /**
   * Every record of a subscription that is not `done`, keyed by record id (the preview joins them with the
   * dead letters it peeks). Bounded; a record whose dead letter is gone is simply never joined.
   */
  async openRecords(topic: string, subscription: string, limit = 20_000): Promise<Map<string, JournalRecord>> {
    const c = await this.#c();
    const out = new Map<string, JournalRecord>();
    try {
      const it = c.items.query<Record<string, unknown>>(
        { query: `SELECT * FROM c WHERE c.scope = @scope AND c.state != 'done'`, parameters: [{ name: '@scope', value: scopeOf(topic, subscription) }] },
        { partitionKey: scopeOf(topic, subscription), maxItemCount: 500 },
      );
      while (it.hasMoreResults() && out.size < limit) {
        const page = await it.fetchNext();
        for (const raw of page.resources ?? []) {
          const r = journalRecordSchema.safeParse(raw);
          if (r.success) out.set(r.data.id, r.data);
        }
        if (!page.resources || page.resources.length === 0) break;
      }
    } catch (err) {
      rethrowCosmos(err, 'replay journal query');
    }
    return out;
  }

  /** The first claim: creates the record as `sending`. Null when a record already exists (someone else's). */
  async claim(k: DeadLetterKey, by: { operationId: string; auditor: string; auditorId?: string | undefined }): Promise<JournalEntry | null> {
    const c = await this.#c();
    const record = this.#claimed(k, by);
    try {
      const r = await c.items.create(record);
      return { record, etag: r.etag ?? '' };
    } catch (err) {
      if (cosmosStatus(err) === 409) return null;
      rethrowCosmos(err, 'replay journal claim');
    }
  }

  /**
   * A claim over a `done` record (the header above: its dead letter is gone, the one in the queue under its key is
   * another): replaces it with a fresh `sending` record, If-Match the etag read. Null when it changed since.
   */
  async reclaimDone(entry: JournalEntry, by: { operationId: string; auditor: string; auditorId?: string | undefined }): Promise<JournalEntry | null> {
    if (entry.record.state !== 'done') throw new Error(`replay journal: only a done record is claimed again, not ${entry.record.state}`);
    const { id: _id, scope: _scope, ...claim } = this.#claimed(entry.record, by);
    return this.transition(entry, claim);
  }

  #claimed(k: DeadLetterKey, by: { operationId: string; auditor: string; auditorId?: string | undefined }): JournalRecord {
    return {
      id: recordIdOf(k),
      scope: scopeOf(k.topic, k.subscription),
      topic: k.topic,
      subscription: k.subscription,
      sequenceNumber: k.sequenceNumber,
      messageId: k.messageId,
      state: 'sending',
      operationId: by.operationId,
      auditor: by.auditor,
      ...(by.auditorId ? { auditorId: by.auditorId } : {}),
      claimedAt: new Date().toISOString(),
      sentAt: null,
      doneAt: null,
      decision: null,
    };
  }

  /** Replaces the record if it is unchanged since `entry` was read; null when someone else changed it first. */
  async transition(entry: JournalEntry, next: Partial<Omit<JournalRecord, 'id' | 'scope'>>): Promise<JournalEntry | null> {
    const c = await this.#c();
    const record: JournalRecord = { ...entry.record, ...next };
    try {
      const r = await c.item(record.id, record.scope).replace(record, { accessCondition: { type: 'IfMatch', condition: entry.etag } });
      return { record, etag: r.etag ?? '' };
    } catch (err) {
      const code = cosmosStatus(err);
      if (code === 412 || code === 404) return null;
      rethrowCosmos(err, 'replay journal write');
    }
  }

  /**
   * Removes a claim whose send certainly did not go out (the broker refused it), so the dead letter is
   * replayable again. Conditional like every transition.
   */
  async release(entry: JournalEntry): Promise<boolean> {
    return deleteIfMatch(await this.#c(), { id: entry.record.id, partitionKey: entry.record.scope, etag: entry.etag }, 'replay journal release');
  }
}
