// The Resolver as its own process (`npm run resolver` = tsx resolver-worker/main.ts): configuration errors name
// the variables without echoing values; with settings it records a message and stops cleanly on SIGTERM.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MessageType as T } from '@nimbus/sdk/contract';
import { ConfigError, readResolverConfig } from './config.ts';
import { eventually, withHarness } from './testHarness.ts';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));

describe('configuration', () => {
  test('missing variables are named; a bad value is named without echoing it', () => {
    assert.throws(
      () => readResolverConfig({ NIMBUS_COSMOS_KEY: 'c2VjcmV0' }),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.match(e.message, /NIMBUS_SERVICEBUS_CONNECTION_STRING or NIMBUS_SERVICEBUS_NAMESPACE is not set/);
        assert.match(e.message, /NIMBUS_COSMOS_ENDPOINT/);
        assert.doesNotMatch(e.message, /NIMBUS_COSMOS_KEY/);
        return true;
      },
    );
    assert.throws(
      () => readResolverConfig({ NIMBUS_SERVICEBUS_CONNECTION_STRING: 'x', NIMBUS_COSMOS_ENDPOINT: 'not a url SharedAccessKey=abc', NIMBUS_COSMOS_KEY: 'k' }),
      (e: unknown) => e instanceof ConfigError && /NIMBUS_COSMOS_ENDPOINT/.test(e.message) && !/SharedAccessKey=abc/.test(e.message),
    );
    const c = readResolverConfig({ NIMBUS_SERVICEBUS_CONNECTION_STRING: 'Endpoint=sb://x', NIMBUS_COSMOS_ENDPOINT: 'http://127.0.0.1:1', NIMBUS_COSMOS_KEY: 'k', NIMBUS_COSMOS_DATABASE: '' });
    assert.equal(c.cosmos.database, 'nimbus', 'an empty variable counts as unset');
    assert.equal(c.concurrency, 16);
  });
});

describe('the process', () => {
  test('without settings it exits 2 with the list; with them it records a message and stops on SIGTERM', async () => {
    const bare = spawn(process.execPath, ['--import', 'tsx', MAIN], { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    bare.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => bare.once('exit', resolve));
    assert.equal(code, 2);
    assert.match(err, /NIMBUS_SERVICEBUS_CONNECTION_STRING/);

    await withHarness(async (h) => {
      const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
        env: {
          PATH: process.env.PATH ?? '',
          NIMBUS_SERVICEBUS_CONNECTION_STRING: h.emulator.connectionString,
          NIMBUS_COSMOS_ENDPOINT: h.cosmosEndpoint,
          NIMBUS_COSMOS_KEY: h.cosmos.key,
          NIMBUS_COSMOS_DATABASE: h.store.database.id,
          NIMBUS_RESOLVER_CONCURRENCY: '2',
          NIMBUS_LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      try {
        await h.send({ type: T.ResolutionResponse, eventId: 'proc-1', from: 'crm' });
        await eventually(async () => ((await h.store.getStatusRow('crm', 'proc-1', 's-1'))?.status === 'Completed' ? true : undefined), 'the row', 30_000);
      } finally {
        child.kill('SIGTERM');
      }
      assert.equal(await exited, 0, output);
      // The emulator's namespace key is random per start: finding it anywhere in the output would be a leak.
      assert.ok(!output.includes(h.emulator.key), 'the namespace key never reaches the log');
      assert.ok(!output.includes(h.emulator.connectionString), 'the connection string never reaches the log');
      assert.equal((await h.store.getCounts('crm')).completed, 1, 'buffered counters were flushed on stop');
    });
  });
});
