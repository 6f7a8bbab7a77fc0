// `npm run recount` (scripts/recount.ts) as an operator runs it: a child process with the Resolver's store settings,
// against the embedded Cosmos server, on counters made wrong on purpose. The endpoints named are repaired and no
// other; `--all` repairs every endpoint with a counters document, an unreadable one included; usage, a bad id and a
// bad setting exit 2 before anything is written; a name with nothing behind it fails (exit 1) without stopping the
// others; an unreachable store is one readable line, exit 1, no stack and no key.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { MessageType, SELF } from '@nimbus/sdk/contract';
import { CONTAINERS, COUNTER_DOC_ID } from '../lib/store/index.ts';
import { ConfigError, readResolverConfig, readStoreConfig } from '../resolver-worker/config.ts';
import { startStoreFixture, uniq, type StoreFixture } from '../lib/store/testing/fixtures.ts';
import { runToExit, type Run } from './testing/runToExit.ts';

const SCRIPT = fileURLToPath(new URL('./recount.ts', import.meta.url));

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f?.close();
});

/**
 * The script in its own process (asynchronously: the embedded server answers from this one). Its environment is
 * built from nothing, so NODE_TEST_CONTEXT / NODE_TEST_CONCURRENCY and the runner's own settings never reach it.
 */
async function runRecount(args: string[], env: Record<string, string> = storeEnv()): Promise<Run> {
  return runToExit(process.execPath, ['--import', 'tsx', SCRIPT, ...args], { env: { PATH: process.env.PATH ?? '', ...env } });
}

function storeEnv(): Record<string, string> {
  return { NIMBUS_COSMOS_ENDPOINT: f.cosmos.endpoint, NIMBUS_COSMOS_KEY: f.cosmos.key, NIMBUS_COSMOS_DATABASE: f.database };
}

/** `n` pending rows on the endpoint (received requests), through the store, counters flushed. */
async function pendingRows(endpointId: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const eventId = randomUUID();
    const message = { endpointId, eventId, sessionId: eventId, messageType: MessageType.EventRequest, parentMessageId: SELF, from: 'shop', to: endpointId, enqueuedAt: new Date().toISOString(), eventTypeId: 'OrderPlaced' };
    await f.store.recordOutcome({ history: { ...message, messageId: randomUUID() }, status: { ...message, messageId: randomUUID() } });
  }
  await f.store.flushCounters();
}

const counters = () => f.raw.database(f.database).container(CONTAINERS.counters);

/** Makes the stored Pending count wrong, past the store (a lost delta, a crash between row and counter). */
async function skewPending(endpointId: string, pending: number): Promise<void> {
  const { resource } = await counters().item(COUNTER_DOC_ID, endpointId).read<{ counts: Record<string, number> }>();
  assert.ok(resource, `counters of ${endpointId}`);
  await counters().item(COUNTER_DOC_ID, endpointId).replace({ ...resource, counts: { ...resource.counts, Pending: pending } });
}

const storedPending = async (endpointId: string) => (await f.store.getCounts(endpointId)).pending;

test('named endpoints are recounted from their rows, and only they; a name with nothing behind it fails alone', async () => {
  const a = uniq('recount-a');
  const b = uniq('recount-b');
  const untouched = uniq('recount-other');
  for (const id of [a, b, untouched]) await pendingRows(id, 2);
  for (const id of [a, b, untouched]) await skewPending(id, 7);

  const ok = await runRecount([a, b]);
  assert.equal(ok.code, 0, ok.out + ok.err);
  assert.equal(await storedPending(a), 2);
  assert.equal(await storedPending(b), 2);
  assert.equal(await storedPending(untouched), 7, 'an endpoint not named is left as it was');
  assert.match(ok.out, new RegExp(`^${a}: pending 7→2, deferred 0→0, failed 0→0, completed 0→0, skipped 0→0$`, 'm'));
  assert.match(ok.out, /recount: 2 endpoints recounted/);

  // A mistyped name: no counters document, no rows. Reported and not created; the other name is still recounted.
  const typo = uniq('recount-typo');
  const partly = await runRecount([typo, untouched]);
  assert.equal(partly.code, 1, partly.out + partly.err);
  assert.match(partly.out, new RegExp(`^${typo}: FAILED: no counters document and no rows`, 'm'));
  assert.match(partly.err, new RegExp(`failed: ${typo}`));
  assert.equal(await storedPending(untouched), 2, 'the other endpoint is recounted all the same');
  assert.equal((await counters().item(COUNTER_DOC_ID, typo).read()).statusCode, 404, 'no empty document for a name with nothing behind it');
});

test('--all recounts every endpoint with a counters document, one that no longer parses included', async () => {
  const skewed = uniq('recount-all');
  const corrupt = uniq('recount-corrupt');
  await pendingRows(skewed, 1);
  await pendingRows(corrupt, 3);
  await skewPending(skewed, 40);
  // Planted past the store, which never writes such a document: counts that are not numbers.
  await counters().items.upsert({ id: COUNTER_DOC_ID, endpointId: corrupt, counts: 'garbled' });

  const r = await runRecount(['--all']);
  assert.equal(r.code, 0, r.out + r.err);
  assert.equal(await storedPending(skewed), 1);
  assert.equal(await storedPending(corrupt), 3, 'the unreadable document is rewritten from the rows');
  assert.match(r.out, new RegExp(`^${corrupt}: counters document unreadable → pending 3,`, 'm'));
  assert.match(r.out, new RegExp(`^${skewed}: pending 40→1,`, 'm'));
  // Every document the store holds now is sound, so the other tests' endpoints are in the list too.
  assert.deepEqual((await f.store.getAllCounts()).unreadable, []);
});

test('no argument, a bad id or a bad setting exit 2 with a readable message, and recount nothing', async () => {
  const endpoint = uniq('recount-refused');
  await pendingRows(endpoint, 1);
  await skewPending(endpoint, 5);

  const bare = await runRecount([]);
  assert.equal(bare.code, 2);
  assert.match(bare.err, /^usage: npm run recount -- <endpoint id>/m);

  const both = await runRecount(['--all', endpoint]);
  assert.equal(both.code, 2);
  assert.match(both.err, /either --all or endpoint ids/);

  const bad = await runRecount([endpoint, 'billing/endpoint']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /not an endpoint id: "billing\/endpoint"/);
  assert.match(bad.err, /nothing recounted/);

  const unset = await runRecount([endpoint], { NIMBUS_COSMOS_KEY: f.cosmos.key });
  assert.equal(unset.code, 2);
  assert.match(unset.err, /NIMBUS_COSMOS_ENDPOINT: is required/);
  assert.ok(!unset.err.includes(f.cosmos.key), 'the key is not echoed');

  assert.equal(await storedPending(endpoint), 5, 'nothing was recounted');
});

test('the store settings are read by the Resolver\'s rules, without its Service Bus settings', () => {
  const env = { NIMBUS_COSMOS_ENDPOINT: 'https://acct.documents.azure.com:443/', NIMBUS_COSMOS_DATABASE: '' };
  assert.deepEqual(readStoreConfig(env), { endpoint: env.NIMBUS_COSMOS_ENDPOINT, database: 'nimbus' }, 'no key: Entra sign-in; empty = unset');
  assert.deepEqual(readStoreConfig(env), readResolverConfig({ ...env, NIMBUS_SERVICEBUS_CONNECTION_STRING: 'Endpoint=sb://x' }).cosmos);
  // An http:// endpoint is the embedded server, which takes its key: refused as the Resolver refuses it.
  assert.throws(() => readStoreConfig({ NIMBUS_COSMOS_ENDPOINT: 'http://127.0.0.1:1' }), (e: unknown) => e instanceof ConfigError && /the recount cannot start/.test(e.message) && /NIMBUS_COSMOS_KEY: not set/.test(e.message));
});

test('an unreachable store is one readable line, exit 1, with neither a stack nor the key', async () => {
  // A port nobody listens on: a listener opened and closed gives one that was free a moment ago.
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));

  const r = await runRecount(['--all'], { NIMBUS_COSMOS_ENDPOINT: `http://127.0.0.1:${port}`, NIMBUS_COSMOS_KEY: f.cosmos.key, NIMBUS_COSMOS_DATABASE: f.database });
  assert.equal(r.code, 1, r.out + r.err);
  assert.match(r.err, /^recount: could not open the store: .*nothing recounted$/m);
  assert.doesNotMatch(r.out + r.err, /^\s+at /m, 'no stack trace');
  assert.ok(!(r.out + r.err).includes(f.cosmos.key), 'the key never reaches the output');
});
