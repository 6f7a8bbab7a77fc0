// The event's history records who acted by stable id as well as by display name (embedded stack, real clients,
// sign-in on with real session cookies): two people with one display name, or a name changed in Entra, stay apart.
// Entries written before the id was recorded still read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SESSION_COOKIE, sealSession } from './auth/session.ts';
import type { Principal } from './auth/principal.ts';
import { useConsoleStack } from './testing/consoleStack.ts';
import { oidcTestEnv } from './testing/oidcEnv.ts';
import { routeRequest } from './testing/routeStack.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const SECRET = 'auditor-id-test-session-secret-0123456789-abcdef';

const stack = useConsoleStack({ database: 'auditor-id', env: oidcTestEnv(SECRET), seed: true });
const seeded = stack.demo;

const post = (who: Principal) =>
  routeRequest('POST', '/api/x', undefined, { cookie: `${SESSION_COOKIE}=${sealSession(who, { secret: SECRET, maxAgeSeconds: 600 })}` });

test("a command's history entry and a refused attempt name the actor's stable id beside the shared display name", async () => {
  const skip = await import('../app/api/event/skip/[endpointId]/[eventId]/route.ts');
  const target = { params: Promise.resolve({ endpointId: 'billingendpoint', eventId: seeded.failed.eventId }) };
  // Two people, one display name.
  const operator: Principal = { kind: 'user', id: 'oid-pat-operator', name: 'Pat Smith', roles: ['Operator'], groups: [] };
  const reader: Principal = { kind: 'user', id: 'oid-pat-reader', name: 'Pat Smith', roles: ['Reader'], groups: [] };
  assert.equal((await skip.POST(post(reader), target)).status, 403);
  const skipped = await skip.POST(post(operator), target);
  assert.equal(skipped.status, 200, await skipped.clone().text());
  const trail = (await stack.store.listAudits(seeded.failed.eventId)).items;
  // Before, both entries said only "Pat Smith".
  assert.deepEqual(
    trail.filter((a) => a.type === 'Denied' || a.type === 'Skip').map((a) => [a.type, a.auditor, a.auditorId]).sort(),
    [
      ['Denied', 'Pat Smith', 'user:oid-pat-reader'],
      ['Skip', 'Pat Smith', 'user:oid-pat-operator'],
    ],
  );
});

test('an entry written before the id was recorded still reads, without one', async () => {
  await stack.store.recordAudit({ eventId: seeded.failed.eventId, endpointId: 'billingendpoint', type: 'Comment', auditor: 'old-operator' });
  const old = (await stack.store.listAudits(seeded.failed.eventId)).items.find((a) => a.auditor === 'old-operator');
  assert.ok(old);
  assert.equal(old.auditorId, undefined);
});
