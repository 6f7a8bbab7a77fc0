// DNS rebinding and forwarded requests against the emulator's HTTP plane: a page on attacker.test that resolves
// to 127.0.0.1 reaches our port with `Host: attacker.test`; a local proxy or tunnel adds X-Forwarded-* or
// Forwarded. Both are refused before the admin plane (or /health) sees the request; loopback Hosts still work.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startEmulator, type RunningEmulator } from './index.ts';
import { createSasToken } from './auth/sas-token.ts';

function get(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: 'GET', headers, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the emulator HTTP plane serves loopback Hosts only', () => {
  let emulator: RunningEmulator;
  let auth: string;
  before(async () => {
    emulator = await startEmulator({ port: 0 });
    emulator.broker.createTopic({ name: 'secret-topic' });
    // A valid Manage token: what is refused is the address, not the credential.
    auth = createSasToken(
      `http://127.0.0.1:${emulator.port}/`,
      'RootManageSharedAccessKey',
      emulator.key,
      Math.floor(Date.now() / 1000) + 300,
    );
  });
  after(async () => {
    await emulator.close();
  });

  test('a rebinding Host is refused with 421 and a one-line reason', async () => {
    for (const host of [
      'attacker.test',
      `attacker.test:${emulator.port}`,
      '127.0.0.1.attacker.test',
      '10.0.0.1',
      '[::2]',
    ]) {
      const res = await get(emulator.port, '/$Resources/Topics', { host, authorization: auth });
      assert.equal(res.status, 421, `Host '${host}'`);
      assert.match(res.body, /^The Host header must name a loopback address[^\n]*\n$/);
      assert.doesNotMatch(res.body, /secret-topic/);
    }
    assert.equal((await get(emulator.port, '/health', { host: 'attacker.test' })).status, 421);
  });

  test('forwarded requests are refused with 403, even with a loopback Host', async () => {
    for (const header of ['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'forwarded']) {
      const res = await get(emulator.port, '/$Resources/Topics', {
        host: `127.0.0.1:${emulator.port}`,
        authorization: auth,
        [header]: header === 'forwarded' ? 'for=203.0.113.7' : '203.0.113.7',
      });
      assert.equal(res.status, 403, header);
      assert.match(res.body, /^Forwarded requests are refused[^\n]*\n$/);
    }
  });

  test('loopback Hosts are served', async () => {
    for (const host of [
      `127.0.0.1:${emulator.port}`,
      `localhost:${emulator.port}`,
      'localhost',
      '127.1.2.3',
      `[::1]:${emulator.port}`,
    ]) {
      const res = await get(emulator.port, '/$Resources/Topics', { host, authorization: auth });
      assert.equal(res.status, 200, `Host '${host}': ${res.body.slice(0, 200)}`);
      assert.match(res.body, /secret-topic/);
    }
    assert.equal((await get(emulator.port, '/health', { host: 'localhost' })).status, 200);
  });
});
