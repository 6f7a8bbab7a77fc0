// /api/ready needs no sign-in, so anyone can call it in a loop and read what it says: one answer per few seconds
// (shared, not one Cosmos query and one admin call per request), and no error texts (configuration errors name
// file paths). This process never opens a working context: its catalog path does not exist.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConsoleContext } from './context.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const SECRET_DIR = '/srv/private-catalogs-7f3a';
Object.assign(process.env, {
  NIMBUS_AUTH: 'off',
  NIMBUS_CATALOG: `${SECRET_DIR}/catalog.json`,
  NIMBUS_SERVICEBUS_CONNECTION_STRING: 'Endpoint=sb://127.0.0.1:9;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=local;UseDevelopmentEmulator=true',
  NIMBUS_COSMOS_ENDPOINT: 'http://127.0.0.1:9',
  NIMBUS_COSMOS_KEY: Buffer.from('k').toString('base64'),
});

test('readiness answers without file paths and shares one answer between calls', async () => {
  const ready = await import('../app/api/ready/route.ts');
  const first = await ready.GET();
  assert.equal(first.status, 503);
  const text = await first.text();
  assert.doesNotMatch(text, /private-catalogs|catalog\.json|\/srv\//, text);
  const body = JSON.parse(text) as { ready: boolean; cosmos: string; checkedAt: string };
  assert.equal(body.ready, false);
  assert.match(body.cosmos, /not configured/);
  // Many calls at once and right after: one check, the same answer.
  const again = await Promise.all(Array.from({ length: 20 }, () => ready.GET().then((r) => r.json() as Promise<{ checkedAt: string }>)));
  assert.deepEqual([...new Set(again.map((r) => r.checkedAt))], [body.checkedAt]);
});

// Each check is bounded by a timer (5 s): once the dependency has answered the timer must go, not stay behind
// until it fires (a probe called in a loop left two per call). The dependencies here answer at once: only the
// timers of checkReady are under test, observed through async_hooks (an unref'd timer is no active resource).
test('a check that answered leaves no timer behind', async () => {
  const { createHook } = await import('node:async_hooks');
  const { checkReady } = await import('./ready.ts');
  const pending = new Set<number>();
  let created = 0;
  const hook = createHook({
    init: (id, type) => {
      if (type !== 'Timeout') return;
      created++;
      pending.add(id);
    },
    destroy: (id) => void pending.delete(id),
  }).enable();
  try {
    const ctx = {
      store: { getAllCounts: () => Promise.resolve([]) },
      serviceBus: { admin: { topicExists: () => Promise.resolve(true) } },
    } as unknown as ConsoleContext;
    const answer = await checkReady(ctx);
    assert.deepEqual([answer.cosmos, answer.serviceBus], ['ok', 'ok']);
    assert.ok(created >= 2, 'the hook sees the timers of both checks');
    // Destroy hooks run a turn or so after the one that cleared the timer; an uncleared one stays 5 s.
    for (let turn = 0; turn < 20 && pending.size > 0; turn++) await new Promise((r) => setImmediate(r));
    assert.equal(pending.size, 0, 'timers of the check still pending');
  } finally {
    hook.disable();
  }
});
