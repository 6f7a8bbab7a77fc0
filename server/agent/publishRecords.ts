// The Agent API's publish records: one Cosmos record per endpoint and message id, so that a publish retried after a
// lost answer (the AgentClient retries no answer, a timeout, a 5xx) is answered with the first outcome instead of
// being sent to the bus a second time (docs/agents.md, "A retried publish"). The topics have no duplicate detection,
// so the console is the only place that can tell a retry from a new publish.
//
// The record is created as `sending` BEFORE the send (a conditional create: two attempts at once cannot both win),
// and replaced by `sent` with the answer once the broker accepted. What a later attempt finds decides:
//   - `sent` by the same principal: the first answer, replayed, nothing sent;
//   - `sending` younger than PUBLISH_IN_FLIGHT_MS: the first attempt is still being sent - 409, retry later;
//   - `sending` older than that: its outcome is unknown (the console died mid-send, the send failed without proof
//     that nothing went out, or the `sent` write failed) - taken over and sent again: the duplicate windows left
//     (docs/agents.md lists them);
//   - nothing, or a record past its expiry (24 h): a new publish.
// A send refused for certain removes the record, so a retry sends (sendRefusal.ts). Every transition is conditional (create, or
// replace/delete If-Match the etag read), like the replay journal's (server/subscriptions/replayJournal.ts).
// The key is the message id the publisher derives from the event type and payload (`{type}-{hash}`), which is also
// what subscribers' inboxes drop duplicates by: the same payload again within the window is the same event.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Container, Database } from '@azure/cosmos';
import { z } from 'zod';
import { cosmosStatus, rethrowCosmos, StoreTransientError } from '../../lib/store/index.ts';
import { openContainer, type ContainerSlot } from '../../lib/store/containers.ts';
import { deleteIfMatch } from '../../lib/store/deleteIfMatch.ts';

export const PUBLISH_RECORDS_CONTAINER = 'agentPublishes';

/** How long a publish is remembered: a retry within it is answered the first outcome; past it, a new publish. */
export const PUBLISH_RECORD_TTL_MS = 24 * 60 * 60_000;

/**
 * How long a `sending` record is taken for a send still in flight. Above the longest the console's Service Bus
 * client can take over one send with its default retry options (4 attempts of 60 s and 3 sleeps of 30 s: 330 s), so
 * a live console's slow send is never sent a second time beside it. The margin, 90 s, also holds the `sent` write's
 * retries (SENT_WRITE_RETRY_DELAYS_MS) and the clock skew between console instances: the record's age is one
 * console's clock less another's `startedAt`, so a console whose clock is ahead by more than the margin could take
 * over a live send (6 min before, a 30 s margin). Past it, a record is `sending` only when its outcome is unknown.
 */
export const PUBLISH_IN_FLIGHT_MS = 7 * 60_000;

/**
 * Pauses before the second, third and fourth attempt of the `sent` write after a send (about 2.6 s in all, within
 * the bound's margin). Given up after one failure before, the record stayed `sending` although the event was sent,
 * and a retry past PUBLISH_IN_FLIGHT_MS sent it again.
 */
export const SENT_WRITE_RETRY_DELAYS_MS: readonly number[] = [100, 500, 2_000];

/** Retry-After (s) on the 409 to a publish whose first attempt is in flight: sends take milliseconds when healthy. */
export const IN_FLIGHT_RETRY_AFTER_S = 5;

export const publishedAnswerSchema = z.object({
  endpointId: z.string(),
  eventTypeId: z.string(),
  messageId: z.string(),
  sessionId: z.string(),
  correlationId: z.string(),
});
export type PublishedAnswer = z.output<typeof publishedAnswerSchema>;

export const publishRecordSchema = z.object({
  id: z.string(),
  endpointId: z.string(),
  messageId: z.string(),
  state: z.enum(['sending', 'sent']),
  /** The principal whose request created the current claim (principalKey): only it is answered the outcome. */
  principalId: z.string(),
  /** The session the request named (as sent), null when it named none: a retry names the same. */
  requestedSessionId: z.string().nullable(),
  startedAt: z.string(),
  sentAt: z.string().nullable(),
  answer: publishedAnswerSchema.nullable(),
  /** Past this the record counts as absent (and is replaced); Cosmos removes it by the container's default TTL. */
  expiresAt: z.string(),
});
export type PublishRecord = z.output<typeof publishRecordSchema>;

export interface PublishRecordEntry {
  record: PublishRecord;
  etag: string;
}

/** What a publish attempt found. */
export type PublishClaim =
  | { kind: 'send'; entry: PublishRecordEntry }
  | { kind: 'replay'; answer: PublishedAnswer }
  | { kind: 'inFlight'; startedAt: string; retryAfterSeconds: number }
  | { kind: 'anotherPrincipal'; at: string }
  | { kind: 'anotherSession'; sessionId: string; at: string };

export interface PublishRequestKey {
  endpointId: string;
  messageId: string;
  principalId: string;
  requestedSessionId: string | null;
}

/** Cosmos forbids some characters in ids and caps them at 255; a message id may hold either. Length-prefixed. */
export function publishRecordId(endpointId: string, messageId: string): string {
  return createHash('sha256').update(`${endpointId.length}\u001f${endpointId}\u001f${messageId}`).digest('hex');
}

/** What a record found says to a request: pure, so the decision is tested without a store. */
export function decide(found: PublishRecord | null, key: PublishRequestKey, now: number): Exclude<PublishClaim, { kind: 'send' }> | 'take' {
  if (!found || Date.parse(found.expiresAt) <= now) return 'take';
  if (found.state === 'sending') {
    const age = now - Date.parse(found.startedAt);
    // An unreadable time is no proof of a live send: taken over (as a stale one).
    if (!(age < PUBLISH_IN_FLIGHT_MS)) return 'take';
    return { kind: 'inFlight', startedAt: found.startedAt, retryAfterSeconds: Math.max(1, Math.min(IN_FLIGHT_RETRY_AFTER_S, Math.ceil((PUBLISH_IN_FLIGHT_MS - age) / 1000))) };
  }
  const at = found.sentAt ?? found.startedAt;
  // Never another principal's answer: its correlation and session ids are its own.
  if (found.principalId !== key.principalId) return { kind: 'anotherPrincipal', at };
  if (found.requestedSessionId !== key.requestedSessionId) return { kind: 'anotherSession', sessionId: found.answer?.sessionId ?? '', at };
  if (!found.answer) return 'take';
  return { kind: 'replay', answer: found.answer };
}

export class PublishRecords {
  readonly #database: Database;
  readonly #slot: ContainerSlot = {};
  readonly #now: () => number;

  constructor(database: Database, now: () => number = Date.now) {
    this.#database = database;
    this.#now = now;
  }

  #c(): Promise<Container> {
    // Created on first use, with the default TTL that makes Cosmos remove expired records. A failed open is the
    // store's typed error (503), a 403 a ContainerMissingError or ContainerAccessDeniedError (503 naming the
    // container), tried again on the next publish (lib/store/containers.ts).
    return openContainer(this.#slot, this.#database, PUBLISH_RECORDS_CONTAINER, '/endpointId', { defaultTtl: Math.ceil(PUBLISH_RECORD_TTL_MS / 1000) });
  }

  async #read(c: Container, id: string, endpointId: string): Promise<{ record: PublishRecord | null; etag: string } | null> {
    try {
      const r = await c.item(id, endpointId).read<Record<string, unknown>>();
      if (r.statusCode === 404 || r.resource === undefined) return null;
      const parsed = publishRecordSchema.safeParse(r.resource);
      // A record that no longer parses proves nothing: replaced, under its etag, like an expired one.
      return { record: parsed.success ? parsed.data : null, etag: r.etag ?? '' };
    } catch (err) {
      if (cosmosStatus(err) === 404) return null;
      rethrowCosmos(err, 'publish record read');
    }
  }

  /**
   * Claims the publish for sending, or says why not. Conditional at every step; a record that changed between the
   * read and the write is read again (a few times, then 503 through the store's error).
   */
  async begin(key: PublishRequestKey): Promise<PublishClaim> {
    const c = await this.#c();
    const id = publishRecordId(key.endpointId, key.messageId);
    for (let round = 0; round < 4; round++) {
      const now = this.#now();
      const record: PublishRecord = {
        id,
        endpointId: key.endpointId,
        messageId: key.messageId,
        state: 'sending',
        principalId: key.principalId,
        requestedSessionId: key.requestedSessionId,
        startedAt: new Date(now).toISOString(),
        sentAt: null,
        answer: null,
        expiresAt: new Date(now + PUBLISH_RECORD_TTL_MS).toISOString(),
      };
      const existing = await this.#read(c, id, key.endpointId);
      const verdict = decide(existing?.record ?? null, key, now);
      if (verdict !== 'take') return verdict;
      try {
        const r = existing
          ? await c.item(id, key.endpointId).replace(record, { accessCondition: { type: 'IfMatch', condition: existing.etag } })
          : await c.items.create(record);
        return { kind: 'send', entry: { record, etag: r.etag ?? '' } };
      } catch (err) {
        const code = cosmosStatus(err);
        // Another attempt wrote first (409 on create, 412/404 on replace): read what it wrote.
        if (code === 409 || code === 412 || code === 404) continue;
        rethrowCosmos(err, 'publish record claim');
      }
    }
    // Answered 503 (try again), nothing sent.
    throw new StoreTransientError('the publish record kept changing; nothing was sent');
  }

  /**
   * The broker accepted: the answer is kept for retries. False when the claim was taken over meanwhile. A failed
   * write is tried again (SENT_WRITE_RETRY_DELAYS_MS) before the store's error is thrown.
   */
  async sent(entry: PublishRecordEntry, answer: PublishedAnswer): Promise<boolean> {
    const record: PublishRecord = { ...entry.record, state: 'sent', sentAt: new Date(this.#now()).toISOString(), answer };
    for (let attempt = 0; ; attempt++) {
      try {
        const c = await this.#c();
        await c.item(record.id, record.endpointId).replace(record, { accessCondition: { type: 'IfMatch', condition: entry.etag } });
        return true;
      } catch (err) {
        const code = cosmosStatus(err);
        // The etag moved: taken over - or an earlier attempt landed and only its answer was lost, then it is ours.
        if (code === 412 || code === 404) return attempt > 0 && (await this.#holds(record));
        const pause = SENT_WRITE_RETRY_DELAYS_MS[attempt];
        if (pause === undefined) rethrowCosmos(err, 'publish record write');
        await sleep(pause);
      }
    }
  }

  /** Whether the stored record is `record` as this console's `sent` write wrote it (not another attempt's claim). */
  async #holds(record: PublishRecord): Promise<boolean> {
    const found = (await this.#read(await this.#c(), record.id, record.endpointId))?.record;
    // Its claim's start and its own sentAt and correlation id: another claim or write carries other values.
    return (
      found?.state === 'sent' &&
      found.startedAt === record.startedAt &&
      found.sentAt === record.sentAt &&
      found.principalId === record.principalId &&
      found.answer?.correlationId === record.answer?.correlationId
    );
  }

  /** The broker refused the send (nothing went out): the claim is removed so a retry sends. */
  async release(entry: PublishRecordEntry): Promise<boolean> {
    return deleteIfMatch(await this.#c(), { id: entry.record.id, partitionKey: entry.record.endpointId, etag: entry.etag }, 'publish record release');
  }
}

type Slot = { database?: Database; records?: PublishRecords };
// One per process (Next.js bundles this module into each route's chunk).
const slot = ((globalThis as Record<symbol, unknown>)[Symbol.for('nimbus.console.publishRecords')] ??= {}) as Slot;

/** The records of the store's database (one instance per database, so its container is opened once). */
export function publishRecordsOf(database: Database): PublishRecords {
  if (slot.database !== database || !slot.records) {
    slot.database = database;
    slot.records = new PublishRecords(database);
  }
  return slot.records;
}
