// The shared browser-test setup stops what it started when it fails halfway, so a test's `after` has nothing left
// to leak: here `prepare` fails after starting something of its own, before the console and Chromium start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSeededConsole } from './seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

test('a setup that fails in prepare rejects with its error and stops what was started, last first', async () => {
  const stopped: string[] = [];
  let cosmosEndpoint = '';
  const failure = new Error('prepare failed on purpose');
  await assert.rejects(
    startSeededConsole({
      database: 'seededfail',
      prepare: async ({ stack, demo, defer }) => {
        cosmosEndpoint = stack.cosmos.endpoint;
        await (await fetch(cosmosEndpoint)).arrayBuffer(); // up: it answers (whatever the status)
        assert.ok(demo?.failed, 'the demo rows are seeded before prepare');
        defer(() => void stopped.push('first'));
        defer(() => void stopped.push('second'));
        throw failure;
      },
    }),
    (err) => err === failure,
  );
  assert.deepEqual(stopped, ['second', 'first']);
  // The stack is down too: its Cosmos server no longer accepts connections.
  await assert.rejects(fetch(cosmosEndpoint), 'the embedded Cosmos server was stopped');
});
