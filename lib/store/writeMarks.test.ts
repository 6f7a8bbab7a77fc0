// The write marks a status row carries (lib/store/writeMarks.ts): pure logic, no store.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { carriesMark, MAX_WRITE_MARKS, nextWriteMarks } from './writeMarks.ts';
import { statusRowSchema } from './schemas.ts';
import { STATUS_ROW_SUMMARY_SELECT } from './store.ts';

describe('nextWriteMarks', () => {
  test('a first write of a row (or over a row of an older writer) carries its mark alone', () => {
    assert.deepEqual(nextWriteMarks(undefined, 'a', 1), [{ o: 'a', n: 1 }]);
    assert.deepEqual(nextWriteMarks([], 'a', 7), [{ o: 'a', n: 7 }]);
  });

  test("the other writers' marks are carried forward unchanged, behind the new one", () => {
    const existing = [
      { o: 'b', n: 4 },
      { o: 'c', n: 9 },
    ];
    assert.deepEqual(nextWriteMarks(existing, 'a', 2), [
      { o: 'a', n: 2 },
      { o: 'b', n: 4 },
      { o: 'c', n: 9 },
    ]);
    assert.deepEqual(
      existing,
      [
        { o: 'b', n: 4 },
        { o: 'c', n: 9 },
      ],
      'the version read is not changed',
    );
  });

  test("the writer's own last mark stays where it stood, behind its new one; its older ones are dropped", () => {
    const existing = [
      { o: 'b', n: 4 },
      { o: 'a', n: 3 },
      { o: 'c', n: 9 },
      { o: 'a', n: 1 },
    ];
    assert.deepEqual(nextWriteMarks(existing, 'a', 5), [
      { o: 'a', n: 5 },
      { o: 'b', n: 4 },
      { o: 'a', n: 3 },
      { o: 'c', n: 9 },
    ]);
  });

  test(`at most ${MAX_WRITE_MARKS} marks: the oldest are dropped`, () => {
    const existing = Array.from({ length: MAX_WRITE_MARKS }, (_, i) => ({ o: `w${i}`, n: i }));
    const next = nextWriteMarks(existing, 'a', 1);
    assert.equal(next.length, MAX_WRITE_MARKS);
    assert.deepEqual(next[0], { o: 'a', n: 1 });
    assert.deepEqual(
      next.slice(1),
      existing.slice(0, MAX_WRITE_MARKS - 1),
      'the last (oldest) one is pushed out',
    );
    // A writer already among them keeps its last mark too: the oldest is pushed out all the same.
    assert.deepEqual(nextWriteMarks(existing, 'w6', 99), [{ o: 'w6', n: 99 }, ...existing.slice(0, 7)]);
  });
});

describe('carriesMark', () => {
  test('only the exact writer and write number', () => {
    const row = {
      lastWrites: [
        { o: 'a', n: 2 },
        { o: 'b', n: 1 },
      ],
    };
    assert.equal(carriesMark(row, 'a', 2), true);
    assert.equal(carriesMark(row, 'b', 1), true);
    assert.equal(
      carriesMark(row, 'a', 1),
      false,
      'another write of the same writer: the double count it must not make',
    );
    assert.equal(carriesMark(row, 'c', 2), false);
    assert.equal(carriesMark({}, 'a', 2), false, 'a row of an older writer');
    assert.equal(carriesMark(null, 'a', 2), false, 'no row');
  });
});

describe("a stored row's lastWrites", () => {
  // The field alone: a row parses with whatever its other fields parse to.
  const lastWrites = statusRowSchema.shape.lastWrites;

  test('absent (an older writer) reads as absent, and a damaged list as absent too: the row stays writable', () => {
    assert.equal(lastWrites.parse(undefined), undefined);
    assert.deepEqual(lastWrites.parse([{ o: 'a', n: 1 }]), [{ o: 'a', n: 1 }]);
    for (const damaged of ['x', [{ o: 'a' }], [{ o: 1, n: 1 }], [{ o: 'a', n: 1.5 }], null])
      assert.equal(lastWrites.parse(damaged), undefined, JSON.stringify(damaged));
  });
});

test("pages of rows (the store's lists, the console's event list) select no bookkeeping and no payload", () => {
  for (const field of ['lastWrites', 'appliedMessageIds', 'counted', 'payload'])
    assert.ok(!STATUS_ROW_SUMMARY_SELECT.includes(`c["${field}"]`), field);
  assert.ok(STATUS_ROW_SUMMARY_SELECT.includes('c["lastMessageId"]'));
});
