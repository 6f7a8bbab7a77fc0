// The CLI's refusals, which need no broker. Provisioning itself is tested against the emulator.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { runProvisionCli, type CliOutput } from './cli.ts';

function capture(): CliOutput & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, log: (l) => lines.push(l), error: (l) => errors.push(l) };
}

// A syntactically valid emulator connection string on a port nothing listens on; no test here reaches it.
const UNUSED = 'Endpoint=sb://127.0.0.1:1;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=s3cr3t-key;UseDevelopmentEmulator=true';

describe('provision CLI', () => {
  test('says clearly that the connection string is missing', async () => {
    const out = capture();
    const result = await runProvisionCli(['--catalog', 'catalog/demo.json'], {}, out);
    assert.equal(result.exitCode, 2);
    assert.match(out.errors.join('\n'), /NIMBUS_SERVICEBUS_CONNECTION_STRING is not set/);
  });

  test('refuses an unknown option with the usage', async () => {
    const out = capture();
    const result = await runProvisionCli(['--catalogue', 'x'], { NIMBUS_SERVICEBUS_CONNECTION_STRING: UNUSED }, out);
    assert.equal(result.exitCode, 2);
    assert.match(out.errors.join('\n'), /usage: npm run provision/);
  });

  test('reports a missing catalog file before touching the broker, and never prints the key', async () => {
    const out = capture();
    const result = await runProvisionCli(['--catalog', 'catalog/absent.json'], { NIMBUS_SERVICEBUS_CONNECTION_STRING: UNUSED }, out);
    assert.equal(result.exitCode, 1);
    assert.match(out.errors.join('\n'), /catalog file not found: catalog\/absent\.json/);
    assert.doesNotMatch([...out.lines, ...out.errors].join('\n'), /s3cr3t-key/);
  });

  test('reports a bad connection string without echoing it', async () => {
    const out = capture();
    const result = await runProvisionCli(['--catalog', 'catalog/demo.json'], { NIMBUS_SERVICEBUS_CONNECTION_STRING: 'Endpoint=sb://x;SharedAccessKey=s3cr3t-key' }, out);
    assert.equal(result.exitCode, 1);
    assert.match(out.errors.join('\n'), /connection string/i);
    assert.doesNotMatch(out.errors.join('\n'), /s3cr3t-key/);
  });
});
