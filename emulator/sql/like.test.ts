// LIKE runs in time linear in the text: '%_%_%_…x' used to compile to a backtracking regular expression whose
// work grew with the text to the power of the wildcard count (forty characters stalled the emulator).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compileLikePattern, type LikeStats } from './like.ts';
import { compileFilter } from './index.ts';
import { fakeMessage } from './fake-message.ts';

const PATHOLOGICAL = `${'%_'.repeat(20)}%x`;

function steps(pattern: string, text: string): { matched: boolean; steps: number } {
  const stats: LikeStats = { steps: 0 };
  const matched = compileLikePattern(pattern, undefined, stats)(text);
  return { matched, steps: stats.steps };
}

describe('LIKE is linear in the text', () => {
  test('a pathological pattern does work proportional to the text (n and 2n)', () => {
    // First on a tiny input (a backtracking matcher would never return on the inputs below).
    assert.ok(steps('%_%x', 'aaa').steps > 0, 'the matcher counts its comparisons');
    const n = 2_000;
    const small = steps(PATHOLOGICAL, 'a'.repeat(n));
    const large = steps(PATHOLOGICAL, 'a'.repeat(2 * n));
    assert.equal(small.matched, false);
    assert.equal(large.matched, false);
    // Linear: doubling the text at most (about) doubles the work. A backtracking matcher multiplies it by ~2^20.
    assert.ok(large.steps <= 3 * small.steps, `steps ${small.steps} → ${large.steps}`);
    assert.equal(steps(PATHOLOGICAL, `${'a'.repeat(n)}x`).matched, true);
  });

  test('a filter with that pattern evaluates in time that grows linearly, through the SQL engine', () => {
    // Four wildcards keep the old (backtracking) code finishing within a second, with a ratio near 2^4.
    const filter = compileFilter(`v LIKE '${'%_'.repeat(4)}%x'`);
    /** Nanoseconds per evaluation: repeated until 5 ms have passed, best of three. */
    const perEvaluation = (n: number): number => {
      const message = fakeMessage({ v: 'a'.repeat(n) });
      let best = Infinity;
      for (let trial = 0; trial < 3; trial++) {
        const start = process.hrtime.bigint();
        let runs = 0;
        let elapsed = 0;
        while (elapsed < 5e6) {
          assert.equal(filter(message), false);
          runs++;
          elapsed = Number(process.hrtime.bigint() - start);
        }
        best = Math.min(best, elapsed / runs);
      }
      return best;
    };
    perEvaluation(60); // warm up the JIT
    const t1 = perEvaluation(60);
    const t2 = perEvaluation(120);
    // Generous: linear work doubles; scheduling noise on a loaded machine is absorbed by the best of three.
    assert.ok(t2 < 6 * t1, `n=60: ${t1.toFixed(0)} ns, n=120: ${t2.toFixed(0)} ns per evaluation`);
  });

  const cases: Array<[string, string, boolean]> = [
    ['', '', true],
    ['', 'a', false],
    ['%', '', true],
    ['a%b%c', 'abc', true],
    ['a%b%c', 'aXbYc', true],
    ['a%b%c', 'ab', false],
    ['a%a', 'a', false],
    ['a%a', 'aa', true],
    ['%ab%ab%', 'abab', true],
    ['%ab%ab%', 'aba', false],
    ['_%_', 'a', false],
    ['_%_', 'ab', true],
    ['%_x_%', 'axb', true],
    ['%aab', 'aaab', true],
    ['a__', 'abc', true],
    ['a__', 'ab', false],
    ['%%%', 'anything', true],
  ];
  for (const [pattern, text, expected] of cases) {
    test(`'${text}' LIKE '${pattern}' is ${expected}, counted or not`, () => {
      assert.equal(compileLikePattern(pattern, undefined)(text), expected);
      assert.equal(steps(pattern, text).matched, expected);
    });
  }

  test('ESCAPE makes a wildcard literal in any segment', () => {
    assert.equal(compileLikePattern('%a!%b%', '!')('xxa%byy'), true);
    assert.equal(compileLikePattern('%a!%b%', '!')('xxaXbyy'), false);
    assert.equal(compileLikePattern('%!_', '!')('a_'), true);
    assert.equal(compileLikePattern('%!_', '!')('ab'), false);
    assert.throws(() => compileLikePattern('ab!', '!'), /ends with its escape character/);
  });
});
