// The Cosmos inbox store against the embedded Cosmos server through the real @azure/cosmos client.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEmbeddedCosmos } from '../../../lib/store/index.ts';
import type { EmbeddedCosmos } from '../../../lib/store/index.ts';
import { startFaultProxy } from '../../../lib/store/testing/faultProxy.ts';
import type { AccessToken, TokenCredential } from '@azure/core-auth';
import { cosmosConnectionSchema, createCosmosClient } from './cosmosClient.ts';
import { CosmosInboxStore } from './cosmosInbox.ts';
import { Inbox, inboxKey, InboxStoreError } from './inbox.ts';

describe('CosmosInboxStore', () => {
  let cosmos: EmbeddedCosmos;
  before(async () => {
    cosmos = await startEmbeddedCosmos({ port: 0 });
  });
  after(async () => {
    await cosmos.close();
  });

  test('remembers a handled key across store instances (a restarted host); unknown keys are not handled', async () => {
    const key = inboxKey('crm', 'm-1')!;
    const first = await CosmosInboxStore.open({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'd1' });
    try {
      assert.equal(await first.has(key), false);
      await first.add(key, new Date());
      await first.add(key, new Date()); // idempotent
      assert.equal(await first.has(key), true);
    } finally {
      first.close();
    }
    const second = await CosmosInboxStore.open({
      endpoint: cosmos.endpoint,
      key: cosmos.key,
      database: 'd1',
    });
    try {
      assert.equal(await second.has(key), true);
      assert.equal(await second.has(inboxKey('crm', 'm-2')!), false);
      assert.equal(await second.has(inboxKey('billing', 'm-1')!), false);
    } finally {
      second.close();
    }
  });

  test('an entry older than the retention no longer counts as handled', async () => {
    let now = new Date('2026-01-01T00:00:00Z');
    const store = await CosmosInboxStore.open(
      { endpoint: cosmos.endpoint, key: cosmos.key, database: 'd2', retentionMs: 60_000 },
      () => now,
    );
    try {
      const key = inboxKey('crm', 'old')!;
      await store.add(key, now);
      now = new Date(now.getTime() + 60_000);
      assert.equal(await store.has(key), true);
      now = new Date(now.getTime() + 1);
      assert.equal(await store.has(key), false);
    } finally {
      store.close();
    }
  });

  test('the container it creates carries the retention as default TTL (whole seconds, rounded up), so Cosmos deletes old entries', async () => {
    const store = await CosmosInboxStore.open({
      endpoint: cosmos.endpoint,
      key: cosmos.key,
      database: 'd4',
      container: 'ttl',
      retentionMs: 90_500,
    });
    store.close();
    const client = createCosmosClient(
      cosmosConnectionSchema.parse({ endpoint: cosmos.endpoint, key: cosmos.key }),
    );
    try {
      const { resource } = await client.database('d4').container('ttl').read();
      assert.equal(resource?.defaultTtl, 91);
    } finally {
      client.dispose();
    }
  });

  test('invalid settings are refused naming the field', async () => {
    await assert.rejects(
      CosmosInboxStore.open({ endpoint: cosmos.endpoint, key: cosmos.key, container: 'a/b' }),
      /container: container name must not contain/,
    );
    await assert.rejects(CosmosInboxStore.open({ endpoint: 'not a url', key: 'k' }), /endpoint/);
  });

  test('without a key, the store signs in with the credential it is given (not DefaultAzureCredential)', async () => {
    const scopes: string[][] = [];
    const credential: TokenCredential = {
      getToken(scope: string | string[]): Promise<AccessToken | null> {
        scopes.push(Array.isArray(scope) ? scope : [scope]);
        return Promise.reject(new Error('fake credential: no token for the test'));
      },
    };
    await assert.rejects(
      CosmosInboxStore.open({
        endpoint: 'https://127.0.0.1:9/', // never reached: the token is asked for before the request is sent
        credential,
        database: 'd5',
        requestTimeoutMs: 1000,
      }),
      /fake credential/,
    );
    assert.ok(scopes.length > 0, 'the given credential was asked for a token');
    assert.ok(
      scopes.flat().every((s) => s.endsWith('/.default')),
      `Cosmos scopes asked for: ${JSON.stringify(scopes)}`,
    );
  });

  test('a credential that is not a TokenCredential is refused naming the field', async () => {
    await assert.rejects(
      CosmosInboxStore.open({
        endpoint: 'https://127.0.0.1:9/',
        credential: { token: 'x' } as unknown as TokenCredential,
      }),
      /credential: credential must be a TokenCredential/,
    );
  });

  test('a 429 from Cosmos is retried by the client (default throttleRetries): has() and add() still resolve', async () => {
    const proxy = await startFaultProxy(cosmos.endpoint);
    const store = await CosmosInboxStore.open({ endpoint: proxy.endpoint, key: cosmos.key, database: 'd6' });
    try {
      const key = inboxKey('crm', 'throttled')!;
      const inboxDocs = (r: { path: string }) => r.path.includes('/colls/inbox/docs');

      proxy.inject({ status: 429, retryAfterMs: 20, times: 1, match: (r) => r.method === 'POST' && inboxDocs(r) });
      await store.add(key, new Date());
      assert.equal(proxy.injected, 1, 'the upsert met the 429');

      proxy.inject({ status: 429, retryAfterMs: 20, times: 1, match: (r) => r.method === 'GET' && inboxDocs(r) });
      assert.equal(await store.has(key), true);
      assert.equal(proxy.injected, 2, 'the point read met the 429');
    } finally {
      store.close();
      await proxy.close();
    }
  });

  test('an unreachable store is a transient inbox error, never read as a duplicate', async () => {
    const down = await startEmbeddedCosmos({ port: 0 });
    const store = await CosmosInboxStore.open({
      endpoint: down.endpoint,
      key: down.key,
      database: 'd3',
      requestTimeoutMs: 1000,
    });
    await down.close();
    try {
      const inbox = new Inbox(store);
      await assert.rejects(inbox.isDuplicate(inboxKey('crm', 'x')!), InboxStoreError);
      await assert.rejects(inbox.record(inboxKey('crm', 'x')!, new Date()), InboxStoreError);
    } finally {
      store.close();
    }
  });
});
