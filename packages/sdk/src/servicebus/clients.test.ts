import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServiceBusClients, emulatorHttpPolicy } from './clients.ts';

type Policy = ReturnType<typeof emulatorHttpPolicy>;
type Request = Parameters<Policy['sendRequest']>[0];

async function rewrite(policy: Policy, url: string): Promise<{ url: string; insecure: boolean | undefined }> {
  const request = { url, allowInsecureConnection: false } as Request;
  let seen: Request | undefined;
  await policy.sendRequest(request, async (r) => {
    seen = r;
    return { request: r, status: 200, headers: {} } as unknown as Awaited<ReturnType<Policy['sendRequest']>>;
  });
  assert.ok(seen);
  return { url: seen.url, insecure: seen.allowInsecureConnection };
}

test('the emulator policy sends admin requests over plain HTTP to the emulator host and port', async () => {
  const policy = emulatorHttpPolicy('127.0.0.1', 45123);
  assert.deepEqual(await rewrite(policy, 'https://127.0.0.1:45123/orders?api-version=2021-05&$top=2'), {
    url: 'http://127.0.0.1:45123/orders?api-version=2021-05&$top=2',
    insecure: true,
  });
});

test('the emulator policy keeps a port that https would treat as its default', async () => {
  // new URL('https://h:443/') drops ":443"; a plain scheme swap would then go to port 80.
  const policy = emulatorHttpPolicy('127.0.0.1', 443);
  assert.equal((await rewrite(policy, 'https://127.0.0.1/x')).url, 'http://127.0.0.1:443/x');
});

test('createServiceBusClients adds the policy only for emulator connection strings', () => {
  const emulator = createServiceBusClients(
    'Endpoint=sb://127.0.0.1:5673;SharedAccessKeyName=n;SharedAccessKey=k;UseDevelopmentEmulator=true',
  );
  const azure = createServiceBusClients(
    'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=k',
  );
  const names = (c: typeof emulator): string[] => c.admin.pipeline.getOrderedPolicies().map((p) => p.name);
  assert.equal(emulator.isEmulator, true);
  assert.ok(names(emulator).includes('nimbusEmulatorPlainHttp'));
  assert.equal(azure.isEmulator, false);
  assert.ok(!names(azure).includes('nimbusEmulatorPlainHttp'));
  return Promise.all([emulator.close(), azure.close()]).then(() => undefined);
});
