// The export's pure parts: CSV fields (quoting, formula neutralising) and the file name carrying the filter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csvField, exportFileName, exportQuerySchema } from './export.ts';

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
