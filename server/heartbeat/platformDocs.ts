// Small console-owned documents kept in the store's `platform` container (partition /id, DESIGN.md §6): the
// heartbeat send claims, the per-endpoint heartbeat opt-outs and the progress records of long operations
// (dead-letter replay). The store has no generic API for these yet, so this module reads and writes them with
// the same client settings and the same `{ id, value, updatedAt }` shape the store uses for its own singletons.
// Ids are prefixed `console_` so they can never collide with the store's documents.
import type { Container, CosmosClient, SqlParameter } from '@azure/cosmos';
import { cosmosConnectionSchema, cosmosStatus, createCosmosClient, rethrowCosmos } from '../../lib/store/index.ts';
import type { CosmosConnection } from '../../lib/store/index.ts';

/** Documents per page of a list of all of them (read page after page). */
const LIST_PAGE = 200;

export interface PlatformDoc<T> {
  value: T;
  etag: string;
}

export class PlatformDocs {
  readonly #client: CosmosClient;
  readonly #container: Container;

  constructor(conn: CosmosConnection) {
    const parsed = cosmosConnectionSchema.parse({ throttleRetries: 3, requestTimeoutMs: 10_000, ...conn });
    this.#client = createCosmosClient({ ...parsed, credential: conn.credential });
    this.#container = this.#client.database(parsed.database).container('platform');
  }

  close(): void {
    this.#client.dispose();
  }

  #id(name: string): string {
    return `console_${name}`;
  }

  async read<T>(name: string): Promise<PlatformDoc<T> | null> {
    const id = this.#id(name);
    try {
      const r = await this.#container.item(id, id).read<{ value: T }>();
      if (r.statusCode === 404 || r.resource === undefined) return null;
      return { value: r.resource.value, etag: r.etag ?? '' };
    } catch (err) {
      if (cosmosStatus(err) === 404) return null;
      rethrowCosmos(err, 'console document read');
    }
  }

  /**
   * Every document whose name starts with `prefix`, newest write first, at most `limit` (Infinity: all of them,
   * page by page) - a cross-partition query, for lists of a few hundred small records such as operations and group
   * notes. With `stateIn`, only documents whose value's `state` is one of these: the unfinished jobs however old
   * they are, which the newest `limit` of all of them may not reach. With `finishedBefore` (an ISO time), only
   * documents whose value's `finishedAt` is before it (without one, whose last write is), oldest write first: the
   * ended jobs past their retention, those that ended first first (an ended job's last write is its end).
   */
  async list<T>(
    prefix: string,
    limit = 200,
    filter: { stateIn?: readonly string[]; finishedBefore?: string } = {},
  ): Promise<Array<{ name: string; value: T; updatedAt: string }>> {
    const { stateIn: states, finishedBefore: before } = filter;
    const where = ['STARTSWITH(c.id, @prefix)'];
    const parameters: SqlParameter[] = [{ name: '@prefix', value: this.#id(prefix) }];
    if (states) {
      where.push('ARRAY_CONTAINS(@states, c["value"].state)');
      parameters.push({ name: '@states', value: [...states] });
    }
    if (before !== undefined) {
      // ISO times compare as strings (toISOString: one format, UTC).
      where.push('((IS_STRING(c["value"].finishedAt) AND c["value"].finishedAt < @before) OR (NOT IS_STRING(c["value"].finishedAt) AND c.updatedAt < @before))');
      parameters.push({ name: '@before', value: before });
    }
    const iterator = this.#container.items.query<{ id: string; value: T; updatedAt: string }>(
      {
        query: `SELECT c.id, c["value"], c.updatedAt FROM c WHERE ${where.join(' AND ')} ORDER BY c.updatedAt ${before !== undefined ? 'ASC' : 'DESC'}`,
        parameters,
      },
      { maxItemCount: Number.isFinite(limit) ? limit : LIST_PAGE },
    );
    const out: Array<{ name: string; value: T; updatedAt: string }> = [];
    try {
      // A page may hold fewer than asked for (or none) while more follow: read on until `limit` or the end.
      while (out.length < limit && iterator.hasMoreResults()) {
        const page = await iterator.fetchNext();
        for (const r of page.resources ?? []) out.push({ name: r.id.slice('console_'.length), value: r.value, updatedAt: r.updatedAt });
      }
    } catch (err) {
      rethrowCosmos(err, 'console document list');
    }
    return out.slice(0, limit);
  }

  /** Deletes a document; one already gone (deleted by another replica, or never written) is not an error. */
  async delete(name: string): Promise<void> {
    const id = this.#id(name);
    try {
      await this.#container.item(id, id).delete();
    } catch (err) {
      if (cosmosStatus(err) === 404) return;
      rethrowCosmos(err, 'console document delete');
    }
  }

  /**
   * Writes a document. `ifMatch` = replace only if unchanged since that read; `ifMatch: null` = create only if
   * absent. Returns false when the condition failed (someone else wrote first); no condition = upsert.
   */
  async write<T>(name: string, value: T, ifMatch?: string | null): Promise<boolean> {
    return (await this.writeVersion(name, value, ifMatch)) !== undefined;
  }

  /**
   * As write, answering the version written - the etag a later write conditional on this one names, so a writer
   * can chain its writes without a read between them - or undefined when the condition failed.
   */
  async writeVersion<T>(name: string, value: T, ifMatch?: string | null): Promise<string | undefined> {
    const id = this.#id(name);
    const doc = { id, value, updatedAt: new Date().toISOString() };
    try {
      const r =
        ifMatch === undefined
          ? await this.#container.items.upsert(doc)
          : ifMatch === null
            ? await this.#container.items.create(doc)
            : await this.#container.item(id, id).replace(doc, { accessCondition: { type: 'IfMatch', condition: ifMatch } });
      return r.etag ?? '';
    } catch (err) {
      const code = cosmosStatus(err);
      if (ifMatch !== undefined && (code === 409 || code === 412 || code === 404)) return undefined;
      rethrowCosmos(err, 'console document write');
    }
  }
}
