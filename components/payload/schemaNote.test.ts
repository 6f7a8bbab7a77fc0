// The schema note in "Resubmit with changes" (components/payload/schemaNote.ts): it must not claim "no schema"
// while the schema is still unknown - the catalog is in, but the checker modules (loaded with import() when the
// dialog opens) have not arrived, so the chosen type's schema has not been compiled yet.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { schemaNote } from './schemaNote.ts';

const base = { catalogError: false, catalogLoaded: true, eventTypeId: 'OrderPlaced' } as const;

test('catalog in, schema not compiled yet: says it is loading, not that there is none', () => {
  const note = schemaNote({ ...base, schema: 'pending' });
  assert.equal(note, 'Loading the schema…');
  assert.doesNotMatch(note, /no JSON schema/);
});

test('a compiled schema: checked against it', () => {
  assert.equal(
    schemaNote({ ...base, schema: 'schema' }),
    'Checked against the OrderPlaced JSON schema in the catalog.',
  );
});

test('a type with no schema in the catalog: any JSON is accepted', () => {
  assert.equal(
    schemaNote({ ...base, schema: 'none' }),
    'OrderPlaced has no JSON schema in the catalog: any JSON is accepted.',
  );
});

test('catalog still loading, or unreadable', () => {
  assert.equal(schemaNote({ ...base, catalogLoaded: false, schema: 'pending' }), 'Loading the catalog…');
  assert.equal(
    schemaNote({ ...base, catalogError: true, catalogLoaded: false, schema: 'none' }),
    'The catalog could not be read: the server checks the schema when you send.',
  );
});
