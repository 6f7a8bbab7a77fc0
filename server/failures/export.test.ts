// The export: its pure parts (CSV fields quoted and formula-neutralised, the file name carrying the filter), and
// on the embedded Cosmos server with the real store, a file that is not the whole list says so - rows that no
// longer parse are named, a list past the cap is cut with a line saying so - and the JSON form parses even when
// the first page held no row that parses.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { msg, startStoreFixture, uniq, type StoreFixture } from '../../lib/store/testing/fixtures.ts';
import { plantUnreadableRows } from '../../lib/store/testing/unreadableRows.ts';
import { eventListQuerySchema } from '../queries.ts';
import { csvField, EXPORT_PAGE_SIZE, exportEvents, exportFileName, exportQuerySchema, MAX_ROWS_HEADER } from './export.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(() => f?.close());

test('CSV fields are quoted when needed and never start a formula', () => {
  assert.equal(csvField('plain'), 'plain');
  assert.equal(csvField(null), '');
  assert.equal(csvField('a,b'), '"a,b"');
  assert.equal(csvField('say "hi"\nbye'), '"say ""hi""\nbye"');
  assert.equal(csvField('=HYPERLINK("x")'), `"'=HYPERLINK(""x"")"`);
  assert.equal(csvField('-1+2'), "'-1+2");
});

test('the file name carries the filter, in safe characters', () => {
  const name = exportFileName(
    'billingendpoint',
    { status: ['Failed', 'DeadLettered'], groupId: 'ab'.repeat(10), eventTypeId: 'OrderPlaced', q: 'credit limit/x' } as never,
    'csv',
    new Date('2026-12-03T10:00:00Z'),
  );
  assert.equal(name, `billingendpoint-Failed+DeadLettered-group_${'ab'.repeat(10)}-OrderPlaced-text_credit_limit_x-2026-12-03.csv`);
  assert.equal(exportFileName('crmendpoint', { status: [] } as never, 'json', new Date('2026-12-03T10:00:00Z')), 'crmendpoint-all-2026-12-03.json');
});

test('the export refuses a continuation token instead of silently starting from the first event', () => {
  const bad = exportQuerySchema.safeParse({ continuation: 'zz' });
  assert.equal(bad.success, false);
  assert.match(bad.error!.issues.map((i) => i.message).join('; '), /continuation is not accepted/);
  assert.equal(exportQuerySchema.safeParse({ format: 'json' }).success, true);
  assert.equal(exportQuerySchema.safeParse({ continuation: '' }).success, true, 'an empty parameter is no token');
});

const noFilter = eventListQuerySchema.parse({});

/** `n` events on a fresh endpoint, the newest last (the stepping clock orders them); their ids, newest first. */
async function endpointWith(n: number): Promise<{ ep: string; ids: string[] }> {
  const ep = uniq('export');
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    ids.unshift(`ev-${i}`);
    await f.store.writeStatus(msg(T.EventRequest, { endpointId: ep, eventId: `ev-${i}` }));
  }
  return { ep, ids };
}

/** `n` rows on `ep` that no longer parse (an unknown status), newer than every row the store wrote; their ids. */
async function plantUnreadable(ep: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `bad-${String(i).padStart(3, '0')}`);
  await plantUnreadableRows(f.raw.database(f.database), { endpointId: ep }, ids);
  return ids;
}

interface JsonExport {
  rows: Array<{ eventId: string }>;
  unreadable: Array<{ id: string; issues: string }>;
  truncated: boolean;
  maxRows: number;
}

test('rows that no longer parse are named at the end of the file, CSV and JSON', { timeout: 60_000 }, async () => {
  const { ep, ids } = await endpointWith(2);
  const [bad] = await plantUnreadable(ep, 1);
  const csv = (await exportEvents(f.store, ep, noFilter, 'csv').text()).trimEnd().split('\r\n');
  assert.equal(csv.length, 4, `a header, the 2 rows that parse and one line naming the other: ${csv.join(' | ')}`);
  assert.deepEqual(csv.slice(1, 3).map((l) => l.split(',')[1]), ids);
  assert.match(csv[3]!, new RegExp(`^"?# 1 row could not be read and is not in this file: ${bad} \\(status: `));

  const json = JSON.parse(await exportEvents(f.store, ep, noFilter, 'json').text()) as JsonExport;
  assert.deepEqual(json.rows.map((r) => r.eventId), ids);
  assert.deepEqual(json.unreadable.map((u) => u.id), [bad]);
  assert.match(json.unreadable[0]!.issues, /^status: /);
  assert.equal(json.truncated, false);
});

test('the JSON file parses when the first page holds no row that parses and more follow', { timeout: 120_000 }, async () => {
  const { ep, ids } = await endpointWith(1);
  // A whole first page of unreadable rows, newer than the one that parses: the old stream began `[,`.
  const bad = await plantUnreadable(ep, EXPORT_PAGE_SIZE);
  const text = await exportEvents(f.store, ep, noFilter, 'json').text();
  const json = JSON.parse(text) as JsonExport;
  assert.deepEqual(json.rows.map((r) => r.eventId), ids);
  assert.deepEqual(json.unreadable.map((u) => u.id).sort(), bad);
});

test('a list past the cap is cut there and the file says so; a list of exactly the cap is whole', { timeout: 60_000 }, async () => {
  const { ep, ids } = await endpointWith(4);
  const cut = exportEvents(f.store, ep, noFilter, 'csv', { maxRows: 3 });
  const csv = (await cut.text()).trimEnd().split('\r\n');
  assert.deepEqual(csv.slice(1, 4).map((l) => l.split(',')[1]), ids.slice(0, 3), 'the newest 3');
  assert.deepEqual(csv.slice(4), ['# cut at 3 rows: more rows match this filter; narrow it (by time range or status) to export the rest']);
  assert.equal(cut.headers.get(MAX_ROWS_HEADER), '3', 'the cap is in a header too');

  const json = JSON.parse(await exportEvents(f.store, ep, noFilter, 'json', { maxRows: 3 }).text()) as JsonExport;
  assert.deepEqual([json.rows.map((r) => r.eventId), json.truncated, json.maxRows], [ids.slice(0, 3), true, 3]);

  const whole = (await exportEvents(f.store, ep, noFilter, 'csv', { maxRows: 4 }).text()).trimEnd().split('\r\n');
  assert.deepEqual(whole.slice(1).map((l) => l.split(',')[1]), ids, 'no line past the rows');
  const wholeJson = JSON.parse(await exportEvents(f.store, ep, noFilter, 'json', { maxRows: 4 }).text()) as JsonExport;
  assert.deepEqual([wholeJson.rows.length, wholeJson.truncated], [4, false]);
});
