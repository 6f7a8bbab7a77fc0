// Leases against the embedded Cosmos server through the real client: one holder at a time, expiry hands the lease
// over, a renewal after losing it fails, racing claims give exactly one winner, and a held lease signals its loss.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CosmosClient, type Database } from '@azure/cosmos';
import { startEmbeddedCosmos, type EmbeddedCosmos } from './cosmos.ts';
import { LeaseStore, holdLease, type Lease } from './leases.ts';
import { uniq } from './testing/fixtures.ts';

let cosmos: EmbeddedCosmos;
let client: CosmosClient;
let database: Database;
before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
  client = new CosmosClient({ endpoint: cosmos.endpoint, key: cosmos.key, connectionPolicy: { enableEndpointDiscovery: false } });
  database = (await client.databases.createIfNotExists({ id: uniq('leases') })).database;
});
after(async () => {
  client.dispose();
  await cosmos.close();
});

test('one holder at a time; the holder renews; expiry hands the lease to another owner', async () => {
  let now = 1_000_000;
  const leases = new LeaseStore(database, { now: () => now });
  const name = uniq('duty');
  const a = await leases.acquire(name, 'a', 10_000);
  assert.ok(a);
  assert.equal(await leases.acquire(name, 'b', 10_000), undefined, 'b must not take a held lease');
  const again = await leases.acquire(name, 'a', 10_000);
  assert.ok(again, 'the holder re-acquiring renews');
  assert.deepEqual(await leases.holder(name), { owner: 'a', expiresAt: now + 10_000 });
  now += 10_001;
  assert.equal(await leases.holder(name), undefined);
  const b = await leases.acquire(name, 'b', 10_000);
  assert.ok(b, 'an expired lease goes to the next owner');
  assert.equal(await leases.renew(again, 10_000), undefined, 'a renewal after losing the lease fails');
  await leases.release(b);
  assert.ok(await leases.acquire(name, 'c', 10_000), 'a released lease is free at once');
});

test('racing acquirers: exactly one winner', async () => {
  const leases = new LeaseStore(database);
  const name = uniq('race');
  const results = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((o) => leases.acquire(name, o, 30_000)));
  assert.equal(results.filter(Boolean).length, 1);
});

test('holdLease keeps renewing past the TTL and aborts its signal when the lease is taken', async () => {
  const leases = new LeaseStore(database);
  const name = uniq('held');
  const held = await holdLease(leases, name, 'a', { ttlMs: 600, renewEveryMs: 100 });
  assert.ok(held);
  const firstExpiry = held.expiresAt;
  await new Promise((r) => setTimeout(r, 1_500));
  assert.equal(held.signal.aborted, false, 'renewals keep the lease');
  assert.ok(held.expiresAt > firstExpiry, 'the expiry the holder sees is the one it last renewed to');
  assert.equal((await leases.holder(name))?.owner, 'a');
  assert.equal(await holdLease(leases, name, 'b', { ttlMs: 600 }), undefined);
  // Someone else takes it (as after a long pause of the holder): the next renewal finds it gone.
  const thief = new LeaseStore(database, { now: () => Date.now() + 60_000 });
  // Its conditional write can lose to a renewal landing between its read and write (seen in CI on a loaded
  // machine): that is the holder's etag winning, not the lease holding, so the thief tries again.
  let stolen = false;
  for (let attempt = 0; attempt < 20 && !stolen; attempt++) stolen = Boolean(await thief.acquire(name, 'b', 600_000));
  assert.ok(stolen);
  await new Promise<void>((resolve) => held.signal.addEventListener('abort', () => resolve(), { once: true }));
  assert.equal(held.signal.aborted, true);
  assert.equal(held.expiresAt, 0, 'a lost lease has no expiry to act before');
  await held.release();
  assert.equal((await leases.holder(name))?.owner, 'b', "releasing a lost lease leaves the new holder's alone");
});

test('a lapsed lease is claimed by exactly one of racing claimers; its holder can neither renew nor resume it; renewals keep the claim; resume takes back only an unclaimed lease', async () => {
  let now = 2_000_000;
  const leases = new LeaseStore(database, { now: () => now });
  const name = uniq('instance');
  const mine = await leases.acquire(name, 'late', 1000);
  assert.ok(mine);
  now += 1001;
  const [lapsed] = await leases.lapsed(name);
  assert.ok(lapsed);
  const claims = await Promise.all(['s1', 's2', 's3'].map((by) => leases.claim(lapsed, by, 'late', 1000)));
  const won = claims.filter((c) => c !== undefined);
  assert.equal(won.length, 1, 'one claimer wins');
  const claim = won[0]!;
  assert.equal(claim.recovering, 'late');
  assert.equal(await leases.renew(mine, 1000), undefined, 'the late holder cannot renew');
  assert.equal(await leases.resume(name, 'late', 1000), undefined, 'nor take it back');
  assert.equal(await leases.acquire(name, 'late', 1000), undefined, 'nor acquire it while the claim is held');
  const renewed = await leases.renew(claim, 1000);
  assert.equal(renewed?.recovering, 'late', 'a renewal keeps the claim');
  now += 1001;
  const [lapsedClaim] = await leases.lapsed(name);
  assert.equal(lapsedClaim?.recovering, 'late', 'a lapsed claim names the death it was recovering');
  assert.equal(await leases.claim({ ...lapsedClaim!, etag: '' }, 's4', 'late', 1000), undefined, 'no claim without a condition');
  assert.ok(await leases.removeIf(lapsedClaim!));
  // An unclaimed lapsed lease of one's own is taken back; a deleted one is not.
  const other = uniq('instance');
  assert.ok(await leases.acquire(other, 'paused', 1000));
  now += 1001;
  assert.ok(await leases.resume(other, 'paused', 1000));
  assert.equal(await leases.resume(name, 'late', 1000), undefined);
});

test('a renewal slower than the renewal interval does not overlap the next one (which lost to it with a 412 and gave up a lease that was fine)', async () => {
  // Every renewal takes 250 ms against a 50 ms interval, as on a loaded store; nobody else wants the lease.
  class SlowRenewals extends LeaseStore {
    renewals = 0;
    override async renew(lease: Lease, ttlMs: number): Promise<Lease | undefined> {
      this.renewals++;
      await new Promise((r) => setTimeout(r, 250));
      return super.renew(lease, ttlMs);
    }
  }
  const leases = new SlowRenewals(database);
  const held = await holdLease(leases, uniq('slow'), 'a', { ttlMs: 10_000, renewEveryMs: 50 });
  assert.ok(held);
  // Positive signal: eight renewals have been asked for (each after the one before has landed, with the fix).
  while (leases.renewals < 8 && !held.signal.aborted) await new Promise((r) => setTimeout(r, 50));
  assert.equal(held.signal.aborted, false, 'the lease was never lost: nobody else took it');
  await held.release();
});
