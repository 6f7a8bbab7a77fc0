// API_ROUTES (what the proxy answers 404/405 from) against the route files themselves: every app/api/**/route.ts
// and the methods it exports, so the list cannot drift; and the matching rules (static segments first).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { API_ROUTES, matchApiRoute } from './apiRoutes.ts';
import { CONSOLE_DIR } from './console.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const;

test('API_ROUTES lists every app/api route file with exactly the methods it exports', async () => {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name === 'route.ts') files.push(full);
    }
  };
  walk(join(CONSOLE_DIR, 'app', 'api'));
  const actual: string[] = [];
  for (const file of files) {
    const path = '/' + relative(join(CONSOLE_DIR, 'app'), file).split(sep).slice(0, -1).join('/');
    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    actual.push(`${path} ${METHODS.filter((m) => typeof mod[m] === 'function').join(',')}`);
  }
  const listed = API_ROUTES.map(([p, m]) => `${p} ${[...m].sort((a, b) => METHODS.indexOf(a) - METHODS.indexOf(b)).join(',')}`);
  assert.deepEqual([...listed].sort(), actual.sort());
});

test('matchApiRoute: known paths and methods pass, unknown paths are 404, missing methods 405 with Allow', () => {
  assert.deepEqual(matchApiRoute('/api/endpoints', 'GET'), { kind: 'found' });
  assert.deepEqual(matchApiRoute('/api/endpoints', 'HEAD'), { kind: 'found' });
  assert.deepEqual(matchApiRoute('/api/endpoints', 'OPTIONS'), { kind: 'found' });
  assert.deepEqual(matchApiRoute('/api/endpoints', 'DELETE'), { kind: 'method', allow: ['GET', 'HEAD', 'OPTIONS'] });
  assert.deepEqual(matchApiRoute('/api/nope', 'GET'), { kind: 'unknown' });
  assert.deepEqual(matchApiRoute('/api/endpoints/billingendpoint/events/extra/more', 'GET'), { kind: 'unknown' });
  // A parameter segment takes any value; the static `export` wins over `[eventId]` (GET both), and the
  // static `reconcile` over `[operationId]` (which has no POST).
  assert.deepEqual(matchApiRoute('/api/endpoints/billingendpoint/events/evt-1', 'GET'), { kind: 'found' });
  assert.deepEqual(matchApiRoute('/api/endpoints/billingendpoint/events/export', 'POST'), { kind: 'method', allow: ['GET', 'HEAD', 'OPTIONS'] });
  assert.deepEqual(matchApiRoute('/api/operations/reconcile', 'POST'), { kind: 'found' });
  assert.deepEqual(matchApiRoute('/api/event/resubmit', 'GET'), { kind: 'method', allow: ['POST', 'OPTIONS'] });
});
