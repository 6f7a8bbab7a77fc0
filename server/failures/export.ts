// Export of an endpoint's event list (the Endpoint page's filter, or a failure group) as CSV or JSON, streamed page
// by page (200 rows per query) so a large list never sits in memory. The file name carries the filter.
import { z } from 'zod';
import type { MessageStore } from '../../lib/store/index.ts';
import { eventListQuerySchema, listEndpointEvents, type EventListItem, type EventListQuery } from '../queries.ts';

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

export function exportEvents(store: MessageStore, endpointId: string, f: EventListQuery, format: 'csv' | 'json'): Response {
  const encoder = new TextEncoder();
  let continuation: string | undefined = undefined;
  let first = true;
  let done = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (done) return;
      if (first && format === 'csv') controller.enqueue(encoder.encode(COLUMNS.join(',') + '\r\n'));
      if (first && format === 'json') controller.enqueue(encoder.encode('['));
      try {
        const page = await listEndpointEvents(store, endpointId, { ...f, pageSize: 200, continuation });
        const chunk =
          format === 'csv'
            ? page.items.map((r) => COLUMNS.map((c) => csvField(r[c])).join(',') + '\r\n').join('')
            : page.items.map((r, i) => (first && i === 0 ? '' : ',') + '\n' + JSON.stringify(r)).join('');
        if (page.items.length > 0) first = false;
        else if (first) first = false;
        controller.enqueue(encoder.encode(chunk));
        continuation = page.continuation ?? undefined;
        if (continuation === undefined) {
          done = true;
          if (format === 'json') controller.enqueue(encoder.encode('\n]\n'));
          controller.close();
        }
      } catch (err) {
        controller.error(err);
      }
    },
  });
  return new Response(stream, {
    headers: {
      'content-type': format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
      'content-disposition': `attachment; filename="${exportFileName(endpointId, f, format)}"`,
      'cache-control': 'no-store',
    },
  });
}
