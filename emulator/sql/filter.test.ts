import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { SqlParameters } from '../broker/api.ts';
import { compileFilter } from './index.ts';
import { fakeMessage } from './fake-message.ts';

function matches(
  sql: string,
  user: Record<string, unknown> = {},
  system: Record<string, unknown> = {},
  parameters?: SqlParameters,
): boolean {
  return compileFilter(sql, parameters)(fakeMessage(user, system));
}

describe('comparison operators', () => {
  const cases: Array<[string, boolean]> = [
    ['n = 5', true],
    ['n = 6', false],
    ['n <> 6', true],
    ['n <> 5', false],
    ['n != 6', true],
    ['n != 5', false],
    ['n > 4', true],
    ['n > 5', false],
    ['n >= 5', true],
    ['n >= 6', false],
    ['n < 6', true],
    ['n < 5', false],
    ['n <= 5', true],
    ['n <= 4', false],
    ['n = 5.0', true],
    ['d > 2', true],
    ['d = 2.5', true],
    ["s = 'abc'", true],
    ["s = 'ABC'", false],
    ["s <> 'abd'", true],
    ["s < 'abd'", true],
    ["s > 'abd'", false],
    ["s >= 'abc'", true],
    ['b = TRUE', true],
    ['b <> FALSE', true],
    ['b = FALSE', false],
  ];
  for (const [sql, expected] of cases) {
    test(`${sql} is ${expected}`, () => {
      assert.equal(matches(sql, { n: 5, d: 2.5, s: 'abc', b: true }), expected);
    });
  }

  test('compares a property with another property', () => {
    assert.equal(matches('a = b', { a: 'x', b: 'x' }), true);
    assert.equal(matches('a < b', { a: 1, b: 2 }), true);
    assert.equal(matches('a > b', { a: 1, b: 2 }), false);
  });

  test('compares dates by instant', () => {
    const at = new Date('2026-01-01T00:00:00Z');
    const params = { '@t': new Date('2025-12-31T00:00:00Z') };
    assert.equal(matches('sys.EnqueuedTimeUtc > @t', {}, { enqueuedtimeutc: at }, params), true);
    assert.equal(matches('sys.EnqueuedTimeUtc < @t', {}, { enqueuedtimeutc: at }, params), false);
    assert.equal(
      matches('sys.EnqueuedTimeUtc = @t', {}, { enqueuedtimeutc: new Date(params['@t']) }, params),
      true,
    );
  });

  test('booleans have no order: < on booleans is unknown', () => {
    assert.equal(matches('b < TRUE', { b: false }), false);
    assert.equal(matches('NOT (b < TRUE)', { b: false }), false);
  });

  test('a string compared with a number is unknown, not an error and not a conversion', () => {
    assert.equal(matches('s = 1', { s: '1' }), false);
    assert.equal(matches('NOT (s = 1)', { s: '1' }), false);
    assert.equal(matches('s <> 1', { s: '1' }), false);
    assert.equal(matches('s = 1 OR t = 2', { s: '1', t: 2 }), true);
  });

  test('a bigint (AMQP long) compares as a number', () => {
    assert.equal(matches('sys.SequenceNumber = 42', {}, { sequencenumber: 42n }), true);
    assert.equal(matches('sys.SequenceNumber > 41.5', {}, { sequencenumber: 42n }), true);
  });
});

describe('three-valued logic', () => {
  // T: a = 1 with a = 1; F: a = 2 with a = 1; U: missing = 1.
  const operand = { T: 'a = 1', F: 'a = 2', U: 'missing = 1' } as const;
  const truth = (sql: string): boolean => matches(sql, { a: 1 });

  test('a comparison with a missing property is unknown: neither it nor its negation matches', () => {
    assert.equal(truth('missing = 1'), false);
    assert.equal(truth('NOT (missing = 1)'), false);
    assert.equal(truth('missing <> 1'), false);
    assert.equal(truth('NOT missing <> 1'), false);
  });

  test('NULL compares as unknown, even with NULL', () => {
    assert.equal(matches('x = NULL', { x: null }), false);
    assert.equal(matches('NOT (x = NULL)', { x: null }), false);
    assert.equal(matches('x = 1', { x: null }), false);
  });

  // Expected results follow the AND / OR tables of the Service Bus documentation; "T" is the only matching outcome.
  const andTable: Record<string, string> = {
    TT: 'T',
    TF: 'F',
    TU: 'U',
    FT: 'F',
    FF: 'F',
    FU: 'F',
    UT: 'U',
    UF: 'F',
    UU: 'U',
  };
  const orTable: Record<string, string> = {
    TT: 'T',
    TF: 'T',
    TU: 'T',
    FT: 'T',
    FF: 'F',
    FU: 'U',
    UT: 'T',
    UF: 'U',
    UU: 'U',
  };
  const keys = ['T', 'F', 'U'] as const;
  for (const l of keys) {
    for (const r of keys) {
      test(`${l} AND ${r} = ${andTable[l + r]}, ${l} OR ${r} = ${orTable[l + r]}`, () => {
        const and = `(${operand[l]}) AND (${operand[r]})`;
        const or = `(${operand[l]}) OR (${operand[r]})`;
        // T matches; F's negation matches; U matches neither way.
        const outcome = (sql: string): string => (truth(sql) ? 'T' : truth(`NOT (${sql})`) ? 'F' : 'U');
        assert.equal(outcome(and), andTable[l + r]);
        assert.equal(outcome(or), orTable[l + r]);
      });
    }
  }

  test('NOT unknown is unknown', () => {
    assert.equal(truth('NOT missing = 1'), false);
    assert.equal(truth('NOT NOT missing = 1'), false);
  });

  test('arithmetic with a missing property is unknown', () => {
    assert.equal(truth('missing + 1 = 1'), false);
    assert.equal(truth('NOT (missing + 1 = 1)'), false);
    assert.equal(truth('-missing = 0'), false);
  });

  test('AND stops at FALSE and OR at TRUE without reading the right side', () => {
    const message = fakeMessage({ a: 1 });
    assert.equal(compileFilter('a = 2 AND b = 1')(message), false);
    assert.equal(message.reads.count, 1);
    assert.equal(compileFilter('a = 1 OR b = 1')(message), true);
    assert.equal(message.reads.count, 2);
  });
});

describe('IS NULL / IS NOT NULL', () => {
  test('IS NULL is true for a missing property and for a null value', () => {
    assert.equal(matches('x IS NULL'), true);
    assert.equal(matches('x IS NULL', { x: null }), true);
    assert.equal(matches('x IS NULL', { x: 0 }), false);
    assert.equal(matches('x IS NULL', { x: '' }), false);
  });

  test('IS NOT NULL is its opposite, never unknown', () => {
    assert.equal(matches('x IS NOT NULL'), false);
    assert.equal(matches('x IS NOT NULL', { x: null }), false);
    assert.equal(matches('x IS NOT NULL', { x: 'v' }), true);
    assert.equal(matches('NOT x IS NULL', { x: 'v' }), true);
  });

  test('a value the engine cannot compare (a buffer) is still not NULL', () => {
    assert.equal(matches('x IS NULL', { x: Buffer.from('ab') }), false);
    assert.equal(matches('x IS NOT NULL', { x: Buffer.from('ab') }), true);
  });

  test('system properties', () => {
    assert.equal(matches('sys.SessionId IS NULL'), true);
    assert.equal(matches('sys.SessionId IS NOT NULL', {}, { sessionid: 's1' }), true);
  });

  test('applies to expressions too', () => {
    assert.equal(matches('x + 1 IS NULL'), true);
    assert.equal(matches('x + 1 IS NULL', { x: 1 }), false);
  });
});

describe('IN / NOT IN', () => {
  test('matches any list item of the same type', () => {
    assert.equal(matches("c IN ('red', 'green')", { c: 'green' }), true);
    assert.equal(matches("c IN ('red', 'green')", { c: 'blue' }), false);
    assert.equal(matches('n IN (1, 2, 3)', { n: 2 }), true);
    assert.equal(matches('n IN (1.0, 2.5)', { n: 1 }), true);
    assert.equal(matches("n IN ('2')", { n: 2 }), false);
    assert.equal(matches('b IN (TRUE)', { b: true }), true);
  });

  test('NOT IN', () => {
    assert.equal(matches("c NOT IN ('red', 'green')", { c: 'blue' }), true);
    assert.equal(matches("c NOT IN ('red', 'green')", { c: 'red' }), false);
  });

  test('a missing left side is unknown for IN and NOT IN', () => {
    assert.equal(matches("c IN ('red')"), false);
    assert.equal(matches("c NOT IN ('red')"), false);
    assert.equal(matches("NOT (c IN ('red'))"), false);
  });

  test('list items may be expressions, properties and parameters', () => {
    assert.equal(matches('n IN (1 + 1, other)', { n: 7, other: 7 }), true);
    assert.equal(matches('n IN (1 + 1, other)', { n: 2 }), true);
    assert.equal(matches('n NOT IN (other, 5)', { n: 2 }), true);
    assert.equal(matches('c IN (@a, @b)', { c: 'y' }, {}, { '@a': 'x', '@b': 'y' }), true);
  });

  test('the documented example', () => {
    const sql = "sys.To IN ('Store5','Store6','Store7') OR StoreId = 'Store8'";
    assert.equal(matches(sql, {}, { to: 'Store6' }), true);
    assert.equal(matches(sql, { StoreId: 'Store8' }), true);
    assert.equal(matches(sql, { StoreId: 'Store1' }, { to: 'Store1' }), false);
  });
});

describe('LIKE', () => {
  const cases: Array<[string, string, boolean]> = [
    ["'abc'", 'abc', true],
    ["'abc'", 'abcd', false],
    ["'ab%'", 'abcdef', true],
    ["'ab%'", 'xab', false],
    ["'%bc'", 'aabc', true],
    ["'%bc'", 'bcd', false],
    ["'%b%'", 'abc', true],
    ["'%b%'", 'acd', false],
    ["'%'", '', true],
    ["''", '', true],
    ["''", 'a', false],
    ["'a_c'", 'abc', true],
    ["'a_c'", 'ac', false],
    ["'a_c'", 'abbc', false],
    ["'a%c%e'", 'abcde', true],
    ["'a%c%e'", 'abcd', false],
    ["'_'", '\n', true],
    ["'a.c'", 'abc', false],
    ["'a.c'", 'a.c', true],
    ["'(x)+[y]$'", '(x)+[y]$', true],
    ["'bus'", 'BUS', false],
  ];
  for (const [pattern, value, expected] of cases) {
    test(`${JSON.stringify(value)} LIKE ${pattern} is ${expected}`, () => {
      assert.equal(matches(`v LIKE ${pattern}`, { v: value }), expected);
      assert.equal(matches(`v NOT LIKE ${pattern}`, { v: value }), !expected);
    });
  }

  test('ESCAPE makes a wildcard literal', () => {
    assert.equal(matches("v LIKE 'ABC\\%' ESCAPE '\\'", { v: 'ABC%' }), true);
    assert.equal(matches("v LIKE 'ABC\\%' ESCAPE '\\'", { v: 'ABCD' }), false);
    assert.equal(matches("v LIKE '100!%%' ESCAPE '!'", { v: '100% sure' }), true);
    assert.equal(matches("v LIKE '100!%%' ESCAPE '!'", { v: '1000' }), false);
    assert.equal(matches("v LIKE 'a!_b' ESCAPE '!'", { v: 'a_b' }), true);
    assert.equal(matches("v LIKE 'a!_b' ESCAPE '!'", { v: 'axb' }), false);
    assert.equal(matches("v LIKE 'a!!b' ESCAPE '!'", { v: 'a!b' }), true);
  });

  test('without ESCAPE a backslash is an ordinary character', () => {
    assert.equal(matches("v LIKE 'a\\%'", { v: 'a\\xyz' }), true);
  });

  test('a missing or non-string operand is unknown', () => {
    assert.equal(matches("v LIKE 'a%'"), false);
    assert.equal(matches("NOT (v LIKE 'a%')"), false);
    assert.equal(matches("v NOT LIKE 'a%'"), false);
    assert.equal(matches("v LIKE '1%'", { v: 12 }), false);
    assert.equal(matches("NOT (v LIKE '1%')", { v: 12 }), false);
  });

  test('the pattern may come from a property or parameter', () => {
    assert.equal(matches('v LIKE p', { v: 'order-1', p: 'order-%' }), true);
    assert.equal(matches('v LIKE p', { v: 'invoice-1', p: 'order-%' }), false);
    assert.equal(matches('v LIKE p', { v: 'x' }), false);
    assert.equal(matches('v LIKE p ESCAPE e', { v: 'a%', p: 'a#%', e: '#' }), true);
    assert.equal(matches('v LIKE p ESCAPE e', { v: 'a%', p: 'a#%', e: '##' }), false);
    assert.equal(matches('v LIKE p ESCAPE e', { v: 'a#', p: 'a#', e: '#' }), false); // dangling escape: unknown
    assert.equal(matches('v LIKE @p', { v: 'abc' }, {}, { '@p': '_b_' }), true);
  });

  test('the documented system property example', () => {
    assert.equal(matches("sys.Label LIKE '%bus%'", {}, { label: 'service bus rocks' }), true);
    assert.equal(matches("sys.Label LIKE '%bus%' OR user.tag IN ('queue', 'topic')", { tag: 'topic' }), true);
  });
});

describe('EXISTS', () => {
  test('tests presence, whatever the value', () => {
    assert.equal(matches('EXISTS(a)', { a: 1 }), true);
    assert.equal(matches('EXISTS(a)', { a: null }), true);
    assert.equal(matches('EXISTS(a)'), false);
    assert.equal(matches('NOT EXISTS(a)'), true);
    assert.equal(matches('EXISTS (user.[a b])', { 'a b': 'x' }), true);
  });

  test('system properties', () => {
    assert.equal(matches('EXISTS(sys.ReplyTo)', {}, { replyto: 'q' }), true);
    assert.equal(matches('EXISTS(sys.ReplyTo)'), false);
  });
});

describe('arithmetic and precedence', () => {
  const trueCases = [
    '1 + 2 * 3 = 7',
    '(1 + 2) * 3 = 9',
    '10 - 2 - 3 = 5',
    '2 * 3 % 4 = 2',
    '-2 * -3 = 6',
    '- (2 + 3) = -5',
    '+5 = 5',
    '7 / 2 = 3',
    '-7 / 2 = -3',
    '7 / 2.0 = 3.5',
    '7.0 / 2 = 3.5',
    '7 % 3 = 1',
    '-7 % 3 = -1',
    '7.5 % 2 = 1.5',
    '1e3 = 1000',
    '1.5E+2 = 150',
    '0.5E-2 = 0.005',
    '101.5E5 = 10150000',
    '.5 = 0.5',
    '2 = 2.0',
    "'a' + 'b' = 'ab'",
    "'n' + 1 = 'n1'",
    "'flag ' + TRUE = 'flag True'",
    'n + 1 = 6',
    'n * d = 12.5',
    'n / 2 = 2',
    'd / 2 = 1.25',
  ];
  for (const sql of trueCases) {
    test(sql, () => {
      assert.equal(matches(sql, { n: 5, d: 2.5 }), true);
    });
  }

  test('integer division or remainder by zero is unknown; double division follows IEEE', () => {
    assert.equal(matches('n / 0 = 0', { n: 5 }), false);
    assert.equal(matches('NOT (n / 0 = 0)', { n: 5 }), false);
    assert.equal(matches('n % 0 = 0', { n: 5 }), false);
    assert.equal(matches('n / 0.0 > 1000000', { n: 5 }), true);
  });

  test('arithmetic on mismatched types is unknown', () => {
    assert.equal(matches('b + 1 = 2', { b: true }), false);
    assert.equal(matches('s - 1 = 0', { s: '1' }), false);
    assert.equal(matches('NOT (s * 2 = 2)', { s: '1' }), false);
  });

  test('AND binds tighter than OR', () => {
    assert.equal(matches('a = 1 OR b = 1 AND c = 1', { a: 1 }), true);
    assert.equal(matches('(a = 1 OR b = 1) AND c = 1', { a: 1 }), false);
  });

  test('NOT binds tighter than AND, looser than a comparison', () => {
    assert.equal(matches('NOT a = 1 AND b = 1', { a: 2, b: 1 }), true);
    assert.equal(matches('NOT (a = 1 AND b = 1)', { a: 1, b: 2 }), true);
    assert.equal(matches('NOT a = 1 AND b = 1', { a: 1, b: 1 }), false);
  });

  test('deep nesting', () => {
    const sql = "((a = 1 AND (b = 2 OR (c IN (3, 4) AND NOT d LIKE 'x%'))) OR e IS NOT NULL)";
    assert.equal(matches(sql, { a: 1, b: 0, c: 4, d: 'yes' }), true);
    assert.equal(matches(sql, { a: 1, b: 0, c: 4, d: 'xyz' }), false);
    assert.equal(matches(sql, { e: 0 }), true);
  });
});

describe('names, constants and keywords', () => {
  test('keywords are case-insensitive', () => {
    const user = { a: 1, s: 'abc' };
    assert.equal(matches("a = 1 and s like 'a%' And NOT s Is Null or false", user), true);
    assert.equal(matches('a iN (1) AND exists(a) AND s iS nOt NuLl AND true', user), true);
    assert.equal(matches("s NOT like 'b%' escape '!'", user), true);
  });

  test('scopes and system property names are case-insensitive; user property names are passed as written', () => {
    const sys = { label: 'L' };
    assert.equal(matches("sys.Label = 'L'", {}, sys), true);
    assert.equal(matches("SYS.LABEL = 'L'", {}, sys), true);
    assert.equal(matches("sys.label = 'L'", {}, sys), true);
    assert.equal(matches("USER.Color = 'red'", { Color: 'red' }), true);
    assert.equal(matches("Color = 'red'", { Color: 'red' }), true);
  });

  test('sys.Subject reads the label', () => {
    assert.equal(matches("sys.Subject = 'L'", {}, { label: 'L' }), true);
  });

  test('system properties map to getSystem with the lower-cased name', () => {
    const sys = {
      to: 'T',
      messageid: 'M',
      correlationid: 'C',
      sessionid: 'S',
      contenttype: 'application/json',
      replyto: 'R',
      replytosessionid: 'RS',
      deliverycount: 2,
    };
    const sql =
      "sys.To = 'T' AND sys.MessageId = 'M' AND sys.CorrelationId = 'C' AND sys.SessionId = 'S' AND " +
      "sys.ContentType = 'application/json' AND sys.ReplyTo = 'R' AND sys.ReplyToSessionId = 'RS' AND sys.DeliveryCount > 1";
    assert.equal(matches(sql, {}, sys), true);
    assert.equal(matches(sql, {}, { ...sys, replyto: 'other' }), false);
  });

  test('user. and unprefixed names read the same user property', () => {
    assert.equal(matches("user.Color = 'red' AND Color = 'red'", { Color: 'red' }), true);
  });

  test('keywords after a scope are plain names', () => {
    assert.equal(
      matches("user.From = 'A' AND user.Set = 1 AND user.Null = 2", { From: 'A', Set: 1, Null: 2 }),
      true,
    );
  });

  test('[bracketed] and "quoted" names may hold any character', () => {
    assert.equal(
      matches("[Property With Space] = 1 AND [HR-EmployeeID] = 'x'", {
        'Property With Space': 1,
        'HR-EmployeeID': 'x',
      }),
      true,
    );
    assert.equal(matches('[a]]b] = 1', { 'a]b': 1 }), true);
    assert.equal(matches('user.[and] = 1', { and: 1 }), true);
    assert.equal(matches('"Contoso & Northwind" = 1', { 'Contoso & Northwind': 1 }), true);
    assert.equal(matches('"say ""hi""" = 1', { 'say "hi"': 1 }), true);
  });

  test('unicode letters and underscores in names', () => {
    assert.equal(matches("größe_1 = 'XL'", { größe_1: 'XL' }), true);
  });

  test('string constants double a single quote', () => {
    assert.equal(matches("s = 'it''s'", { s: "it's" }), true);
    assert.equal(matches("s = ''''", { s: "'" }), true);
    assert.equal(matches("s = 'ünïcödé ✓'", { s: 'ünïcödé ✓' }), true);
  });

  test('TRUE, FALSE and boolean properties as conditions', () => {
    assert.equal(matches('TRUE'), true);
    assert.equal(matches('FALSE'), false);
    assert.equal(matches('NOT FALSE'), true);
    assert.equal(matches('1 = 1'), true);
    assert.equal(matches('flag', { flag: true }), true);
    assert.equal(matches('flag', { flag: false }), false);
    assert.equal(matches('NOT flag', { flag: false }), true);
    assert.equal(matches('flag', { flag: 'true' }), false);
    assert.equal(matches('NOT flag', { flag: 'true' }), false);
    assert.equal(matches('flag AND a = 1', { flag: true, a: 1 }), true);
  });

  test('property() and p() read a property named at run time', () => {
    assert.equal(matches("property('Color') = 'red'", { Color: 'red' }), true);
    assert.equal(matches("p('user.Color') = 'red'", { Color: 'red' }), true);
    assert.equal(matches("PROPERTY('sys.Label') = 'L'", {}, { label: 'L' }), true);
    assert.equal(matches("property('sys.' + which) = 'L'", { which: 'Label' }, { label: 'L' }), true);
    assert.equal(matches("property('sys.NoSuch') IS NULL"), true);
    assert.equal(matches('property(n) IS NULL', { n: 5 }), true);
  });

  test('newid() yields a fresh GUID string', () => {
    assert.equal(matches("newid() LIKE '________-____-____-____-____________'"), true);
    assert.equal(matches('newid() = newid()'), false);
  });
});

describe('parameters', () => {
  test('keys are accepted with or without @ and case-insensitively', () => {
    assert.equal(matches('a = @v', { a: 'x' }, {}, { '@v': 'x' }), true);
    assert.equal(matches('a = @v', { a: 'x' }, {}, { v: 'x' }), true);
    assert.equal(matches('a = @V', { a: 'x' }, {}, { '@v': 'x' }), true);
  });

  test('numbers, booleans and null', () => {
    const params = { '@n': 5, '@d': 2.5, '@b': true, '@z': null };
    assert.equal(matches('n = @n AND d = @d AND b = @b', { n: 5, d: 2.5, b: true }, {}, params), true);
    assert.equal(matches('n / @d = 2', { n: 5 }, {}, params), true);
    assert.equal(matches('n = @z', { n: 5 }, {}, params), false);
    assert.equal(matches('@z IS NULL', {}, {}, params), true);
    assert.equal(matches('@b', {}, {}, params), true);
  });

  test('the documented example', () => {
    assert.equal(
      matches('source = @stringParam', { source: 'orders' }, {}, { '@stringParam': 'orders' }),
      true,
    );
  });
});

describe('odd message values never throw', () => {
  const oddValues: unknown[] = [
    Buffer.from([1, 2]),
    { nested: true },
    [1, 2],
    Number.NaN,
    Number.POSITIVE_INFINITY,
    new Date('invalid'),
    Symbol('s'),
    () => 1,
    undefined,
  ];
  const filters = [
    'x = 1',
    "x = 'a'",
    'x > 1',
    'x + 1 = 2',
    '-x = 1',
    "x LIKE 'a%'",
    'x IN (1, 2)',
    'x NOT IN (1, 2)',
    'x IS NULL',
    'EXISTS(x)',
    'x',
    'NOT x',
    "x + 'a' = 'a'",
    'x / 0 = 1',
    'property(x) = 1',
    'x LIKE x',
  ];
  for (const sql of filters) {
    test(sql, () => {
      const filter = compileFilter(sql);
      for (const value of oddValues) {
        assert.equal(typeof filter(fakeMessage({ x: value })), 'boolean');
      }
    });
  }

  test('NaN is not equal to anything, not even NaN', () => {
    assert.equal(matches('x = x', { x: Number.NaN }), false);
    assert.equal(matches('x <> x', { x: Number.NaN }), true);
  });
});

describe('NimBus topology rules (DESIGN.md §3)', () => {
  test("main subscription: user.To = '{E}'", () => {
    const filter = compileFilter("user.To = 'Billing'");
    assert.equal(filter(fakeMessage({ To: 'Billing' })), true);
    assert.equal(filter(fakeMessage({ To: 'Resolver' })), false);
    assert.equal(filter(fakeMessage({})), false);
  });

  test('forwarder: event type, EventRequest, and From not yet stamped', () => {
    const filter = compileFilter(
      "user.EventTypeId = 'OrderPlaced' AND user.MessageType = 'EventRequest' AND user.From IS NULL",
    );
    assert.equal(filter(fakeMessage({ EventTypeId: 'OrderPlaced', MessageType: 'EventRequest' })), true);
    assert.equal(
      filter(fakeMessage({ EventTypeId: 'OrderPlaced', MessageType: 'EventRequest', From: null })),
      true,
    );
    // Already forwarded once: From is set, so the copy does not loop back through the forwarder.
    assert.equal(
      filter(fakeMessage({ EventTypeId: 'OrderPlaced', MessageType: 'EventRequest', From: 'Sales' })),
      false,
    );
    assert.equal(
      filter(fakeMessage({ EventTypeId: 'OrderPlaced', MessageType: 'ResolutionResponse' })),
      false,
    );
    assert.equal(filter(fakeMessage({ EventTypeId: 'OrderShipped', MessageType: 'EventRequest' })), false);
    assert.equal(filter(fakeMessage({ MessageType: 'EventRequest' })), false);
  });

  test("the admin client's TrueFilter and FalseFilter SQL", () => {
    assert.equal(matches('1=1'), true);
    assert.equal(matches('1=0'), false);
  });

  test('one compiled filter serves many messages', () => {
    const filter = compileFilter("user.To = 'Retry'");
    let matched = 0;
    for (let i = 0; i < 1000; i++)
      if (filter(fakeMessage({ To: i % 4 === 0 ? 'Retry' : 'Other' }))) matched++;
    assert.equal(matched, 250);
  });
});
