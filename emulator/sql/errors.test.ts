import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SqlError, compileAction, compileFilter } from './index.ts';

/** Asserts that compiling throws a SqlError whose message matches and whose position is as given. */
function rejects(compile: () => unknown, message: RegExp, position?: number): void {
  assert.throws(compile, (error: unknown) => {
    assert.ok(error instanceof SqlError, `expected SqlError, got ${String(error)}`);
    assert.match(error.message, message);
    if (position !== undefined) assert.equal(error.position, position, error.message);
    return true;
  });
}

describe('invalid filters are rejected at compile time with the problem and its position', () => {
  const cases: Array<[string, RegExp, number]> = [
    ["user.To = 'X' AND AND a = 1", /^Unexpected token 'AND' at position 19: expected an expression$/, 19],
    ['a = ', /^Unexpected end of input at position 5: expected an expression$/, 5],
    ['a =', /Unexpected end of input at position 4/, 4],
    ["a = 'unterminated", /^Unterminated string literal starting at position 5$/, 5],
    ['[unterminated = 1', /^Unterminated bracketed name starting at position 1$/, 1],
    ['"x = 1', /^Unterminated quoted identifier starting at position 1$/, 1],
    ['a = 1 b = 2', /^Unexpected token 'b' at position 7: expected end of expression$/, 7],
    ['(a = 1', /Unexpected end of input at position 7: expected '\)' to close the parenthesis/, 7],
    ['a = 1)', /Unexpected token '\)' at position 6: expected end of expression/, 6],
    ['a # 1', /^Unexpected character '#' at position 3$/, 3],
    ['a == 1', /Unexpected token '=' at position 4: expected an expression/, 4],
    ['a = = 1', /Unexpected token '=' at position 5: expected an expression/, 5],
    ['a IN 1', /Unexpected number 1 at position 6: expected '\(' to start the IN list/, 6],
    ['a IN ()', /Unexpected token '\)' at position 7: expected an expression/, 7],
    ['a IN (1, 2', /expected '\)' to close the IN list/, 11],
    ['a IS 1', /expected NULL or NOT NULL after IS/, 6],
    ['a IS NOT 1', /expected NULL after IS NOT/, 10],
    ['a NOT = 1', /expected IN or LIKE after NOT/, 7],
    ['EXISTS a', /expected '\(' after EXISTS/, 8],
    ['EXISTS(1)', /expected a property name inside EXISTS/, 8],
    ['sys.NoSuchThing = 1', /^Unknown system property 'sys\.NoSuchThing' at position 1$/, 1],
    ['sys. = 1', /expected a property name after 'sys\.'/, 6],
    ['foo(1) = 1', /^Unknown function 'foo' at position 1/, 1],
    ['newid(1) = 1', /newid\(\) takes no arguments/, 7],
    ['a = @missing', /^Parameter '@missing' at position 5 has no value in the rule's parameters$/, 5],
    ['a = 12abc', /Malformed number at position 5/, 5],
    ['a = 1e', /Malformed number at position 5: exponent has no digits/, 5],
    ['a = 9223372036854775808', /out of the 64-bit range/, 5],
    ['a = 1e999', /out of range/, 5],
    ['a = @', /Parameter name expected after '@' at position 5/, 5],
    ["a LIKE 'x' ESCAPE 'ab'", /ESCAPE value at position 19 must be a single character/, 19],
    ["a LIKE 'x!' ESCAPE '!'", /ends with its escape character/, 8],
    ['a LIKE 5', /LIKE pattern at position 8 must be a string/, 8],
    ['a = 1 AND 5', /Expected a condition at position 11/, 11],
    ["'text'", /Expected a condition at position 1/, 1],
    ['NOT 1 + 2', /Expected a condition at position 7/, 7],
    ['(a = 1) = TRUE', /Expected a value at position 4, found a condition/, 4],
    ['(a = 1) + 1 = 2', /Expected a value at position 4, found a condition/, 4],
    ['AND = 1', /Unexpected token 'AND' at position 1: expected an expression/, 1],
    ['[] = 1', /Empty bracketed name at position 1/, 1],
    ['', /The filter expression is empty/, 1],
    ['   ', /The filter expression is empty/, 1],
  ];
  for (const [sql, message, position] of cases) {
    test(JSON.stringify(sql), () => rejects(() => compileFilter(sql), message, position));
  }

  test('a parameter of an unsupported type', () => {
    rejects(
      () => compileFilter('a = @p', { '@p': { no: 1 } as unknown as string }),
      /Parameter '@p' at position 5 has an unsupported value type \(object\)/,
      5,
    );
  });
});

describe('invalid actions are rejected at compile time', () => {
  const cases: Array<[string, RegExp, number]> = [
    ['', /The action is empty: expected SET or REMOVE/, 1],
    [';', /The action is empty/, 1],
    ['a = 1', /^Unexpected token 'a' at position 1: expected SET or REMOVE$/, 1],
    ['SET = 1', /Unexpected token '=' at position 5: expected a property name after SET/, 5],
    ['SET a 1', /Unexpected number 1 at position 7: expected '=' after the property name in SET/, 7],
    ['SET a =', /Unexpected end of input at position 8: expected an expression/, 8],
    ['SET a = 1 b = 2', /Unexpected token 'b' at position 11: expected ';', SET or REMOVE/, 11],
    ['SET a = b = 1', /Expected a value at position 11, found a condition/, 11],
    ['SET a = 1; DELETE b', /Unexpected token 'DELETE' at position 12: expected ';', SET or REMOVE/, 12],
    ['REMOVE', /expected a property name after REMOVE/, 7],
    ['REMOVE 1', /expected a property name after REMOVE/, 8],
    ['SET sys.Nope = 1', /Unknown system property 'sys\.Nope' at position 5/, 5],
    ['SET sys.Size = 1', /System property sys\.size at position 5 is read-only/, 5],
    ['SET a = @p', /Parameter '@p' at position 9 has no value/, 9],
    ['SET a = bogus()', /Unknown function 'bogus' at position 9/, 9],
  ];
  for (const [sql, message, position] of cases) {
    test(JSON.stringify(sql), () => rejects(() => compileAction(sql), message, position));
  }
});
