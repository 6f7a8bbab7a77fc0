import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SqlError, compileAction } from './index.ts';
import { fakeMessage } from './fake-message.ts';

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('SET and REMOVE', () => {
  test('SET creates and overwrites user properties', () => {
    const message = fakeMessage({ a: 1 });
    compileAction("SET a = 2; SET b = 'new'")(message);
    assert.equal(message.user.get('a'), 2);
    assert.equal(message.user.get('b'), 'new');
  });

  test('REMOVE deletes a user property; removing a missing one is harmless', () => {
    const message = fakeMessage({ a: 1, b: 2 });
    compileAction('REMOVE a; REMOVE user.missing')(message);
    assert.equal(message.user.has('a'), false);
    assert.equal(message.user.get('b'), 2);
  });

  test('statements run in order and see earlier effects', () => {
    const message = fakeMessage({ n: 1 });
    compileAction('SET n = n + 1; SET m = n * 10; REMOVE n')(message);
    assert.equal(message.user.has('n'), false);
    assert.equal(message.user.get('m'), 20);
  });

  test('separators: semicolons, a trailing semicolon, or none at all', () => {
    for (const sql of [
      "SET a = 1; SET b = 'x';",
      "SET a = 1 SET b = 'x'",
      "  SET a = 1 ;; SET b = 'x' ; ",
      "set a = 1\nset b = 'x'",
    ]) {
      const message = fakeMessage();
      compileAction(sql)(message);
      assert.deepEqual(Object.fromEntries(message.user), { a: 1, b: 'x' }, sql);
    }
  });

  test('expressions may use properties, parameters, arithmetic and concatenation', () => {
    const message = fakeMessage({ first: 'Ada', n: 4 });
    compileAction("SET greeting = 'Hello ' + first + @suffix; SET half = n / 2; SET ratio = n / 8.0", {
      '@suffix': '!',
    })(message);
    assert.equal(message.user.get('greeting'), 'Hello Ada!');
    assert.equal(message.user.get('half'), 2);
    assert.equal(message.user.get('ratio'), 0.5);
  });

  test('a missing user property is unknown, not an error: the target becomes null', () => {
    const message = fakeMessage();
    compileAction('SET copy = missing; SET sum = missing + 1')(message);
    assert.equal(message.user.get('copy'), null);
    assert.equal(message.user.get('sum'), null);
  });

  test('SET can copy a system property into a user property', () => {
    const message = fakeMessage({}, { label: 'L', deliverycount: 3 });
    compileAction('SET user.OriginalLabel = sys.Label; SET tries = sys.DeliveryCount')(message);
    assert.equal(message.user.get('OriginalLabel'), 'L');
    assert.equal(message.user.get('tries'), 3);
  });

  test('SET keeps names as written and scopes case-insensitively; [brackets] work as targets', () => {
    const message = fakeMessage();
    compileAction('SET USER.MixedCase = 1; SET [with space] = 2; SET user.[x-y] = 3; SET "q" = 4')(message);
    assert.deepEqual(Object.fromEntries(message.user), { MixedCase: 1, 'with space': 2, 'x-y': 3, q: 4 });
  });

  test('newid() sets a different GUID each time the action runs', () => {
    const action = compileAction('SET id = newid()');
    const first = fakeMessage();
    const second = fakeMessage();
    action(first);
    action(second);
    assert.match(String(first.user.get('id')), GUID);
    assert.match(String(second.user.get('id')), GUID);
    assert.notEqual(first.user.get('id'), second.user.get('id'));
  });
});

describe('system properties', () => {
  test('SET sys.* calls setSystem with the lower-cased name', () => {
    const message = fakeMessage();
    compileAction(
      "SET sys.Label = 'L'; SET sys.To = 'T'; SET sys.CorrelationId = 'C'; SET sys.ReplyTo = 'R'; " +
        "SET sys.SessionId = 'S'; SET sys.ContentType = 'text/plain'; SET sys.MessageId = 'M'; SET sys.Subject = 'L2'",
    )(message);
    assert.deepEqual(Object.fromEntries(message.system), {
      label: 'L2',
      to: 'T',
      correlationid: 'C',
      replyto: 'R',
      sessionid: 'S',
      contenttype: 'text/plain',
      messageid: 'M',
    });
  });

  test('numbers and booleans assigned to text system properties are stored as text', () => {
    const message = fakeMessage({ n: 42 });
    compileAction('SET sys.CorrelationId = n; SET sys.Label = TRUE; SET sys.To = NULL')(message);
    assert.equal(message.system.get('correlationid'), '42');
    assert.equal(message.system.get('label'), 'True');
    assert.equal(message.system.get('to'), null);
  });

  test('read-only system properties are rejected at compile time', () => {
    for (const sql of [
      'SET sys.SequenceNumber = 1',
      'SET sys.EnqueuedTimeUtc = 1',
      'SET sys.DeliveryCount = 0',
    ]) {
      assert.throws(
        () => compileAction(sql),
        (error: unknown) => error instanceof SqlError && /read-only/.test(error.message),
        sql,
      );
    }
  });

  test('REMOVE is for user properties only', () => {
    assert.throws(
      () => compileAction('REMOVE sys.Label'),
      /REMOVE at position 1 applies to user properties only/,
    );
  });

  test('an error thrown by the message view propagates from the compiled action', () => {
    // The fake refuses 'size' like a broker would; the engine itself does not swallow it.
    const message = fakeMessage();
    message.setSystem = () => {
      throw new SqlError('rejected by broker');
    };
    assert.throws(() => compileAction("SET sys.Label = 'x'")(message), /rejected by broker/);
  });
});

describe('NimBus topology actions (DESIGN.md §3)', () => {
  test("forwarder: SET user.From = 'E'; SET user.EventId = newid(); SET user.To = 'C'", () => {
    const action = compileAction(
      "SET user.From = 'Sales'; SET user.EventId = newid(); SET user.To = 'Billing'",
    );
    const message = fakeMessage({ EventTypeId: 'OrderPlaced', MessageType: 'EventRequest', To: 'Sales' });
    action(message);
    assert.equal(message.user.get('From'), 'Sales');
    assert.equal(message.user.get('To'), 'Billing');
    assert.match(String(message.user.get('EventId')), GUID);
    assert.equal(message.user.get('EventTypeId'), 'OrderPlaced');
  });

  test("Continuation / Retry: SET user.To = '{E}'; SET user.From = 'Retry'", () => {
    const message = fakeMessage({ To: 'Retry' });
    compileAction("SET user.To = 'Billing'; SET user.From = 'Retry'")(message);
    assert.deepEqual(Object.fromEntries(message.user), { To: 'Billing', From: 'Retry' });
  });

  test("Resolver and Manager: SET user.From = '{E}'", () => {
    const message = fakeMessage({ To: 'Resolver' });
    compileAction("SET user.From = 'Manager'")(message);
    assert.equal(message.user.get('From'), 'Manager');
  });
});
