// Export of an endpoint's event list (the Endpoint page's filter, or a failure group) as CSV or JSON, streamed page
// by page (200 rows per query) so a large list never sits in memory. The file name carries the filter. A file that
// is not the whole list says so at its end: rows that no longer parse (named) and a cut at MAX_EXPORT_ROWS.
import { z } from 'zod';
import type { MessageStore } from '../../lib/store/index.ts';
import { eventListQuerySchema, readEndpointEventsPage, type EventListItem, type EventListQuery, type UnreadableRow } from '../queries.ts';

// The export streams every page from the first itself: a `continuation` (the list's paging token) would be ignored,
// so it is refused rather than giving a file that silently does not start where the caller asked.
export const exportQuerySchema = eventListQuerySchema
  .and(z.object({ format: z.enum(['csv', 'json']).default('csv') }))
  .refine((q) => q.continuation === undefined, { message: 'the export always starts at the first event; continuation is not accepted', path: ['continuation'] });

const COLUMNS: Array<keyof EventListItem> = ['endpointId', 'eventId', 'sessionId', 'eventTypeId', 'status', 'subStatus', 'messageId', 'messageType', 'errorText', 'createdAt', 'updatedAt'];

/** One CSV field: quoted when needed; a leading = + - @ is prefixed with ' so a spreadsheet never runs it as a formula. */
export function csvField(v: unknown): string {
  let s = v === null || v === undefined ? '' : String(v);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** `billingendpoint-Failed-group_ab12…-2026-12-03.csv`: the filter in the name (safe characters only). */
export function exportFileName(endpointId: string, f: EventListQuery, format: 'csv' | 'json', now = new Date()): string {
  const parts = [endpointId, f.status.join('+') || 'all', f.groupId ? `group_${f.groupId}` : null, f.eventTypeId ?? null, f.sessionId ? `session_${f.sessionId}` : null, f.q ? `text_${f.q}` : null, now.toISOString().slice(0, 10)];
  return `${parts.filter(Boolean).join('-').replace(/[^A-Za-z0-9._+-]+/g, '_').slice(0, 180)}.${format}`;
}

/**
 * The most rows one export reads, parsing or not: any Reader may export, so one request must not stream an
 * endpoint's whole history. A longer list is cut there and the file says so (docs/failures.md).
 */
export const MAX_EXPORT_ROWS = 100_000;
/** Rows per store query. */
export const EXPORT_PAGE_SIZE = 200;
/** Response header giving the cap; the file itself says whether this one was cut (headers go before any row). */
export const MAX_ROWS_HEADER = 'X-NimBus-Export-Max-Rows';

/** What the end of the file says: the rows read that no longer parse, and whether rows past the cap were left. */
interface ExportEnd {
  unreadable: UnreadableRow[];
  truncated: boolean;
}

/**
 * The list's pages from the first, reading at most `maxRows` rows (parsing or not); `end` is filled as they are read.
 * At the cap one more row is asked for only to learn whether the list goes on: a continuation token alone proves
 * nothing (Cosmos may end a page with one though nothing follows), and a list of exactly `maxRows` is not cut.
 */
async function* exportPages(store: MessageStore, endpointId: string, f: EventListQuery, maxRows: number, end: ExportEnd): AsyncGenerator<EventListItem[]> {
  let continuation: string | undefined = undefined;
  let read = 0;
  for (;;) {
    const room = maxRows - read;
    const page = await readEndpointEventsPage(store, endpointId, { ...f, pageSize: Math.max(1, Math.min(EXPORT_PAGE_SIZE, room)), continuation });
    if (room <= 0) {
      if (page.items.length + page.corrupt.length > 0) {
        end.truncated = true;
        return;
      }
    } else {
      read += page.items.length + page.corrupt.length;
      end.unreadable.push(...page.corrupt);
      yield page.items;
    }
    continuation = page.continuation ?? undefined;
    if (continuation === undefined) return;
  }
}

/** One format's text: before the rows, a page of rows, and after them (with what `end` says). */
interface ExportWriter {
  start: string;
  rows(items: EventListItem[]): string;
  finish(end: ExportEnd, maxRows: number): string;
}

/**
 * CSV: a header line, one line per row, then - only when the file is not the whole list - one record per fact whose
 * single field starts with `#` (quoted when its text needs it), so a whole export is as it always was.
 */
function csvWriter(): ExportWriter {
  return {
    start: COLUMNS.join(',') + '\r\n',
    rows: (items) => items.map((r) => COLUMNS.map((c) => csvField(r[c])).join(',') + '\r\n').join(''),
    finish: (end, maxRows) => {
      const notes: string[] = [];
      if (end.unreadable.length > 0) {
        const n = end.unreadable.length;
        notes.push(`# ${n} row${n === 1 ? '' : 's'} could not be read and ${n === 1 ? 'is' : 'are'} not in this file: ${end.unreadable.map((u) => `${u.id} (${u.issues})`).join('; ')}`);
      }
      if (end.truncated) notes.push(`# cut at ${maxRows} rows: more rows match this filter; narrow it (by time range or status) to export the rest`);
      return notes.map((n) => csvField(n) + '\r\n').join('');
    },
  };
}

/**
 * JSON: an object, `rows` first (streamed) and then what is only known at the end, so a consumer reads the cut and
 * the unreadable rows from the file it has. The comma before a row depends on rows written, not pages read: a first
 * page of unreadable rows alone must not start the array with a comma.
 */
function jsonWriter(): ExportWriter {
  let written = 0;
  return {
    start: '{"rows":[',
    rows: (items) => items.map((r) => (written++ === 0 ? '\n' : ',\n') + JSON.stringify(r)).join(''),
    finish: (end, maxRows) => `\n],\n"unreadable":${JSON.stringify(end.unreadable)},\n"truncated":${end.truncated},\n"maxRows":${maxRows}}\n`,
  };
}

/** `options.maxRows` is for tests (a cap reached with a few rows); the route always uses MAX_EXPORT_ROWS. */
export function exportEvents(store: MessageStore, endpointId: string, f: EventListQuery, format: 'csv' | 'json', options: { maxRows?: number } = {}): Response {
  const maxRows = options.maxRows ?? MAX_EXPORT_ROWS;
  const encoder = new TextEncoder();
  const end: ExportEnd = { unreadable: [], truncated: false };
  const pages = exportPages(store, endpointId, f, maxRows, end);
  const writer = format === 'csv' ? csvWriter() : jsonWriter();
  let started = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (!started) {
          started = true;
          controller.enqueue(encoder.encode(writer.start));
        }
        const next = await pages.next();
        if (next.done) {
          controller.enqueue(encoder.encode(writer.finish(end, maxRows)));
          controller.close();
        } else controller.enqueue(encoder.encode(writer.rows(next.value)));
      } catch (err) {
        controller.error(err);
      }
    },
    async cancel() {
      await pages.return(undefined);
    },
  });
  return new Response(stream, {
    headers: {
      'content-type': format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
      'content-disposition': `attachment; filename="${exportFileName(endpointId, f, format)}"`,
      'cache-control': 'no-store',
      [MAX_ROWS_HEADER]: String(maxRows),
    },
  });
}
