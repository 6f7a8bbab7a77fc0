// A bounded in-process cache of the status row versions this store last wrote or read, with their etags.
// It lets a guarded write skip its point read: the decision is made against the cached version and the write
// is conditional on that version's etag, so a stale entry costs a 412 and a fresh read, never a wrong write.
// (A decision to *ignore* made from the cache is always confirmed by a fresh read, since no etag checks it.)
// Both copies of an event share its SessionId, so they tend to reach the same Resolver instance: hits are common.
import type { StatusRow } from './schemas.ts';

/** Rows with bigger payloads are not cached (memory); they simply take the read path. */
const MAX_CACHED_PAYLOAD_CHARS = 16_384;

export class RowCache {
  readonly #max: number;
  readonly #entries = new Map<string, { row: StatusRow; etag: string }>();

  constructor(maxEntries: number) {
    this.#max = maxEntries;
  }

  get(key: string): { row: StatusRow; etag: string } | undefined {
    const e = this.#entries.get(key);
    if (e) {
      // refresh recency
      this.#entries.delete(key);
      this.#entries.set(key, e);
    }
    return e;
  }

  set(key: string, row: StatusRow, etag: string | undefined): void {
    this.#entries.delete(key);
    if (this.#max === 0 || etag === undefined || etag === '') return;
    if (row.payload !== undefined && JSON.stringify(row.payload).length > MAX_CACHED_PAYLOAD_CHARS) return;
    this.#entries.set(key, { row, etag });
    if (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  /**
   * Forgets `key`'s version only if it is still the one a failed write decided from (`etag`; undefined: the write
   * had no cached version, it created or read its own). A concurrent write of the row may have cached a newer
   * version since: that one is kept, or the next write of the row would pay a read for nothing.
   */
  forgetIfStill(key: string, etag: string | undefined): void {
    if (etag !== undefined && this.#entries.get(key)?.etag === etag) this.#entries.delete(key);
  }
}
