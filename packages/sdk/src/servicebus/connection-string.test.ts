import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConnectionStringError, parseConnectionString } from './connection-string.ts';

const KEY = 'c2VjcmV0LWtleS12YWx1ZQ==';
const KEY_BODY = KEY.replace(/=+$/, '');

describe('parseConnectionString', () => {
  test('reads an Azure namespace connection string', () => {
    const info = parseConnectionString(
      `Endpoint=sb://contoso.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${KEY}`,
    );
    assert.equal(info.hostname, 'contoso.servicebus.windows.net');
    assert.equal(info.port, undefined);
    assert.equal(info.fullyQualifiedNamespace, 'contoso.servicebus.windows.net');
    assert.equal(info.sharedAccessKeyName, 'RootManageSharedAccessKey');
    assert.equal(info.authentication, 'sharedAccessKey');
    assert.equal(info.useDevelopmentEmulator, false);
    // The base64 padding after the first '=' belongs to the key.
    assert.ok(info.connectionString.endsWith(`SharedAccessKey=${KEY}`));
  });

  test('reads an emulator connection string with its port', () => {
    const info = parseConnectionString(
      'Endpoint=sb://127.0.0.1:45123;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=local;UseDevelopmentEmulator=true',
    );
    assert.equal(info.hostname, '127.0.0.1');
    assert.equal(info.port, 45123);
    assert.equal(info.fullyQualifiedNamespace, '127.0.0.1:45123');
    assert.equal(info.useDevelopmentEmulator, true);
  });

  test('accepts keys in any case and normalises UseDevelopmentEmulator for the SDK', () => {
    const info = parseConnectionString(
      'endpoint=sb://localhost:5673;sharedaccesskeyname=n;sharedaccesskey=k;usedevelopmentemulator=True;',
    );
    assert.equal(info.useDevelopmentEmulator, true);
    // core-amqp only recognises the exact value "true".
    assert.match(info.connectionString, /;UseDevelopmentEmulator=true$/);
  });

  test('accepts a shared access signature instead of a key', () => {
    const info = parseConnectionString(
      'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessSignature=SharedAccessSignature sr=x&sig=y&se=1&skn=n',
    );
    assert.equal(info.authentication, 'sharedAccessSignature');
  });

  const bad: Array<[string, string, RegExp]> = [
    ['empty', '  ', /empty/],
    ['no Endpoint', `SharedAccessKeyName=n;SharedAccessKey=${KEY}`, /Endpoint is missing/],
    [
      'wrong scheme',
      `Endpoint=https://ns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=${KEY}`,
      /sb:\/\//,
    ],
    ['no key', 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=n', /SharedAccessKey/],
    [
      'unknown key',
      `Endpoint=sb://ns/;SharedAccessKeyName=n;SharedAccessKey=${KEY};Foo=bar`,
      /unknown key 'Foo'/,
    ],
    [
      'duplicate key',
      `Endpoint=sb://ns/;SharedAccessKeyName=n;SharedAccessKey=${KEY};SharedAccessKey=${KEY}`,
      /more than once/,
    ],
    ['not key=value', `Endpoint=sb://ns/;SharedAccessKeyName=n;${KEY_BODY}`, /key=value/],
    ['a key where a name belongs', `Endpoint=sb://ns/;SharedAccessKeyName=n;${KEY}`, /unknown key \(/],
    [
      'bad emulator flag',
      `Endpoint=sb://ns/;SharedAccessKeyName=n;SharedAccessKey=${KEY};UseDevelopmentEmulator=yes`,
      /true or false/,
    ],
    ['path in Endpoint', `Endpoint=sb://ns/queue;SharedAccessKeyName=n;SharedAccessKey=${KEY}`, /path/],
  ];
  for (const [name, value, message] of bad) {
    test(`rejects a connection string with ${name}, without echoing the key`, () => {
      assert.throws(
        () => parseConnectionString(value),
        (err: unknown) => {
          assert.ok(err instanceof ConnectionStringError);
          assert.match(err.message, message);
          assert.ok(!err.message.includes(KEY_BODY), 'the key must not appear in the message');
          return true;
        },
      );
    });
  }

  test('keeps the key out of JSON and the redacted form', () => {
    const info = parseConnectionString(
      `Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=${KEY}`,
    );
    assert.ok(!JSON.stringify(info).includes(KEY_BODY));
    assert.ok(!info.redacted.includes(KEY_BODY));
    assert.match(info.redacted, /SharedAccessKey=\*\*\*/);
  });
});
