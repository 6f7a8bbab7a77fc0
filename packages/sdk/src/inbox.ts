// The inbox (opt-in idempotent consumer): remembers which MessageIds an endpoint handled successfully, so a
// redelivery or a second copy (a crash between settlement steps, an identical publish, a replayed copy sent twice)
// is answered "DuplicateDetected" instead of running the handler again. Keys are (endpoint, MessageId), byte-exact.
// Failures are never read as "duplicate": a store outage is a TransientError and the message comes back later.
import { createHash } from 'node:crypto';
import { TransientError } from './errors.ts';

export interface InboxStore {
  /** True when this endpoint already handled this MessageId successfully. */
  has(key: string): Promise<boolean>;
  /** Records a successful handling. Idempotent. */
  add(key: string, at: Date): Promise<void>;
}

/** How long a handled MessageId counts as handled unless a store is told otherwise: 7 days. */
export const DEFAULT_INBOX_RETENTION_MS = 7 * 24 * 3600_000;

/** MessageIds longer than this (or endpoints longer than 260) bypass the inbox: the handler runs, nothing is recorded. */
export const MAX_INBOX_MESSAGE_ID = 512;
const MAX_INBOX_ENDPOINT = 260;

/** The store key, or undefined when this delivery cannot use the inbox (blank or oversized ids). */
export function inboxKey(endpointId: string, messageId: string | undefined): string | undefined {
  if (
    !endpointId ||
    !messageId ||
    messageId.trim() === '' ||
    messageId.length > MAX_INBOX_MESSAGE_ID ||
    endpointId.length > MAX_INBOX_ENDPOINT
  )
    return undefined;
  // Length-prefixed so ('a', 'b\u001fc') and ('a\u001fb', 'c') cannot collide.
  return createHash('sha256')
    .update(`${endpointId.length}\u001f${endpointId}\u001f${messageId}`)
    .digest('hex');
}

export class InboxStoreError extends TransientError {
  override readonly name = 'InboxStoreError';
}

/** Wraps a store so its failures are transient with a fixed, secret-free message. */
export class Inbox {
  private readonly store: InboxStore;
  constructor(store: InboxStore) {
    this.store = store;
  }

  async isDuplicate(key: string): Promise<boolean> {
    try {
      return await this.store.has(key);
    } catch (error) {
      throw new InboxStoreError('the inbox store could not be read', { cause: error });
    }
  }

  async record(key: string, at: Date): Promise<void> {
    try {
      await this.store.add(key, at);
    } catch (error) {
      throw new InboxStoreError('the inbox store could not be written', { cause: error });
    }
  }
}

/**
 * A process-local store with a retention window: enough for one instance per endpoint and for tests. A durable
 * store (e.g. on the message store's Cosmos account) implements the same two methods.
 */
export class MemoryInboxStore implements InboxStore {
  private readonly entries = new Map<string, number>();
  private readonly retentionMs: number;
  constructor(retentionMs = DEFAULT_INBOX_RETENTION_MS) {
    this.retentionMs = retentionMs;
  }

  async has(key: string): Promise<boolean> {
    const at = this.entries.get(key);
    if (at === undefined) return false;
    if (Date.now() - at > this.retentionMs) {
      this.entries.delete(key);
      return false;
    }
    return true;
  }

  async add(key: string, at: Date): Promise<void> {
    this.entries.set(key, at.getTime());
  }
}
