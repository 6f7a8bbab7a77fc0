// The replay journal: one Cosmos record per dead letter a replay has touched, so a replay that dies midway
// never leads to a second copy (docs/operations.md "Replay journal"). The record is written as `sending`
// BEFORE the copy goes out, `sent` once the send resolved, `done` once the dead letter is completed. A later
// replay reads it first: `sent` → complete the dead letter without sending; `sending` → the copy may or may not
// have gone out, so nothing is sent until an operator decides (resend, or remove as delivered); `done` → its dead
// letter is gone (written only after the completion), so a dead letter in the queue under the same key is another
// one (a recreated entity reusing the sequence number and the MessageId): judged as one with no record.
//
// A `sent` record can outlive its dead letter too: the `done` write after the completion may fail (retried, then
// given up: the copy is out and the dead letter gone, nothing is undone for a record). A dead letter under its key
// that was enqueued after the record's claim cannot be the one claimed - that one was in the queue when the claim was
// written - so it is judged as one with no record as well (isAboutAnother), never removed unsent. The times come from
// two clocks, the broker's (enqueuedTimeUtc) and the console's (claimedAt), hence a margin (CLOCK_SKEW_MS).
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

/**
 * How far the console's clock may lag the broker's before a dead letter that was in the queue at a claim looks
 * enqueued after it. Service Bus stamps enqueuedTimeUtc when it accepts a message, and a dead letter keeps it (the
 * emulator does, emulator/broker/delivery.ts deadLetter; were it the moment of dead-lettering instead, that too is
 * before any claim on it). A console clock behind the broker's by more than this could make a `sent` record's own
 * dead letter - still in the queue because its completion failed - look like another one, and send it twice; a clock
 * ahead only narrows the check (a reuse within the margin is judged as before: by the record). Servers and Azure
 * are NTP-synchronised to well under a second; five minutes is the lag Kerberos and most token checks tolerate. A
 * recreated entity's dead letter comes later than that in practice: the entity is deleted after the old dead letter
 * was completed, then recreated, then a message sent and dead-lettered. The retried `done` write (replay.ts
 * completeSent) covers a reuse quicker than the margin.
 */
export const CLOCK_SKEW_MS = 5 * 60_000;

/**
 * True when `record` cannot be about the dead letter in the queue under its key, enqueued at `enqueuedAt`: a `done`
 * record (its dead letter was completed before it was written), or a `sent` one whose claim is older than the dead
 * letter by more than `clockSkewMs` (the claimed one was in the queue when the claim was written). A `sending` record
 * is never set aside this way: the uncertain stay for an operator's decision. An unknown enqueue time sets nothing aside.
 */
export function isAboutAnother(record: JournalRecord, enqueuedAt: Date | string | null | undefined, clockSkewMs = CLOCK_SKEW_MS): boolean {
  if (record.state === 'done') return true;
  if (record.state !== 'sent' || enqueuedAt === null || enqueuedAt === undefined) return false;
  const enqueued = typeof enqueuedAt === 'string' ? Date.parse(enqueuedAt) : enqueuedAt.getTime();
  const claimed = Date.parse(record.claimedAt);
  if (Number.isNaN(enqueued) || Number.isNaN(claimed)) return false;
  return enqueued > claimed + clockSkewMs;
}

/** The verdict on the dead letter enqueued at `enqueuedAt`, given the record under its key (isAboutAnother). */
export function verdictOf(record: JournalRecord | null | undefined, enqueuedAt?: Date | string | null, clockSkewMs = CLOCK_SKEW_MS): JournalVerdict {
  // `done`, or a `sent` record older than the dead letter: about another dead letter (the header above).
  if (!record || isAboutAnother(record, enqueuedAt, clockSkewMs)) return 'none';
  return record.state === 'sending' ? 'uncertain' : 'alreadySent';
}

export interface ReplayJournalOptions {
  /** The margin for clock skew between the broker and the console (default CLOCK_SKEW_MS; tests set it lower). */
  clockSkewMs?: number;
}

export class ReplayJournal {
  readonly #database: Database;
  readonly #slot: ContainerSlot = {};
  readonly clockSkewMs: number;

  /** Uses the store's database (and so its client and its throttle settings); nothing of its own to close. */
  constructor(database: Database, options: ReplayJournalOptions = {}) {
    this.#database = database;
    this.clockSkewMs = options.clockSkewMs ?? CLOCK_SKEW_MS;
  }

  /** isAboutAnother with this journal's margin. */
  isAboutAnother(record: JournalRecord, enqueuedAt: Date | string | null | undefined): boolean {
    return isAboutAnother(record, enqueuedAt, this.clockSkewMs);
  }

  /** verdictOf with this journal's margin. */
  verdictOf(record: JournalRecord | null | undefined, enqueuedAt: Date | string | null | undefined): JournalVerdict {
    return verdictOf(record, enqueuedAt, this.clockSkewMs);
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
   * A claim over a record about another dead letter (`done`, or `sent` and older than the dead letter: isAboutAnother)
   * for the one in the queue under its key: replaces it with a fresh `sending` record, If-Match the etag read. Null
   * when it changed since. When it is gone since (deleted - retention pruning), the dead letter has no record: claimed
   * fresh, as `claim` does (null only if someone else claimed it first); before, the 404 read as a lost race and the
   * dead letter was held, unsent, although the preview counted it to send.
   */
  async reclaim(entry: JournalEntry, by: { operationId: string; auditor: string; auditorId?: string | undefined }): Promise<JournalEntry | null> {
    if (entry.record.state === 'sending') throw new Error('replay journal: a sending record is never claimed over (uncertain until an operator decides)');
    const c = await this.#c();
    const record = this.#claimed(entry.record, by);
    try {
      const r = await c.item(record.id, record.scope).replace(record, { accessCondition: { type: 'IfMatch', condition: entry.etag } });
      return { record, etag: r.etag ?? '' };
    } catch (err) {
      const code = cosmosStatus(err);
      if (code === 412) return null;
      if (code !== 404) rethrowCosmos(err, 'replay journal write');
    }
    return this.claim(entry.record, by);
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
