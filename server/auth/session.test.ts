import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SESSION_COOKIE, openSession, sealSession } from './session.ts';
import type { Principal } from './principal.ts';

const secret = 'a-test-session-secret-that-is-long-enough-0123456789';
const alice: Principal = { kind: 'user', id: 'oid-alice', name: 'alice@example.test', roles: ['Operator'], groups: ['g1'] };

describe('session cookie', () => {
  test('seals a principal that opens again with the same secret', () => {
    const value = sealSession(alice, { secret, maxAgeSeconds: 3600 });
    assert.match(value, /^v1\.[A-Za-z0-9_-]+$/);
    assert.ok(!value.includes('alice'), 'the value is encrypted, not merely encoded');
    assert.deepEqual(openSession(value, { secret }), alice);
    assert.equal(SESSION_COOKIE, 'nimbus_session');
  });

  test('an expired session is refused, whatever the browser sent', () => {
    const now = Date.UTC(2026, 0, 1);
    const value = sealSession(alice, { secret, maxAgeSeconds: 60, now });
    assert.deepEqual(openSession(value, { secret, now: now + 59_000 }), alice);
    assert.equal(openSession(value, { secret, now: now + 60_000 }), null);
  });

  test('a tampered value, another secret or garbage is refused', () => {
    const value = sealSession(alice, { secret, maxAgeSeconds: 3600 });
    const raw = Buffer.from(value.slice(3), 'base64url');
    for (const i of [0, 13, raw.length - 1]) {
      const bad = Buffer.from(raw);
      bad[i] = bad[i]! ^ 1;
      assert.equal(openSession(`v1.${bad.toString('base64url')}`, { secret }), null, `byte ${i} flipped`);
    }
    assert.equal(openSession(value, { secret: `${secret}x` }), null);
    for (const junk of ['', 'v1.', 'v2.' + value.slice(3), 'not a cookie', value.slice(0, 20)]) assert.equal(openSession(junk, { secret }), null);
  });
});
