import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import rhea from 'rhea';
import type { BrokerOptions } from './api.ts';
import type { ServiceBusBroker } from './broker.ts';
import { createServiceBusBroker } from './index.ts';
import { FakeClock, inTempDir, msg, props, tick } from './test-helpers.ts';
import { journalFile } from './journal.ts';

const src = { topic: 't', subscription: 's' };

/** The generation of the one journal in a data directory. */
function journalGeneration(dir: string): number {
  const journals = readdirSync(dir).filter((f) => f.startsWith('journal-'));
  assert.equal(journals.length, 1);
  return Number(/journal-(\d+)/.exec(journals[0]!)?.[1]);
}

/** Puts a line into the journal before its last one (the running broker's fd is not in append mode). */
function insertBeforeLastLine(dir: string, line: string): void {
  const path = join(dir, journalFile(journalGeneration(dir)));
  const lines = readFileSync(path, 'utf8').split('\n').filter((l) => l.length > 0);
  lines.splice(lines.length - 1, 0, line);
  writeFileSync(path, lines.join('\n') + '\n');
}

/** The snapshot's records of one kind (`put`, `sch`, ...), parsed. */
function snapshotRecords(dir: string, kind: string): Array<Record<string, unknown>> {
  return readFileSync(join(dir, 'snapshot.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith(`{"k":"${kind}"`))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Rewrites the snapshot's first record of one kind with `change` and returns the record as written. */
function breakFirstRecord(
  dir: string,
  kind: string,
  change: (r: Record<string, unknown>) => Record<string, unknown>,
): Record<string, unknown> {
  const path = join(dir, 'snapshot.jsonl');
  const lines = readFileSync(path, 'utf8').split('\n');
  const first = lines.findIndex((l) => l.startsWith(`{"k":"${kind}"`));
  const broken = change(JSON.parse(lines[first]!) as Record<string, unknown>);
  lines[first] = JSON.stringify(broken);
  writeFileSync(path, lines.join('\n'));
  return broken;
}

function peekIds(b: ServiceBusBroker): unknown[] {
  return b.peek(src, { maxCount: 5 }).map((m) => m.message.message_id);
}

describe('persistence', () => {
  test('topology, messages in every state, delivery counts and session state survive a restart', async () => {
    await inTempDir('nimbus-broker-', async (dir) => {
      const clock = new FakeClock();
      const opts: BrokerOptions = { dataDir: dir, now: clock.now };
      const b1 = await createServiceBusBroker(opts);
      b1.createTopic({ name: 't', defaultMessageTimeToLiveMs: 3_600_000 });
      b1.createSubscription({ topicName: 't', subscriptionName: 's', lockDurationMs: 30_000 });
      b1.createSubscription({ topicName: 't', subscriptionName: 'sess', requiresSession: true });
      const when = new Date(1_600_000_000_000);
      b1.createRule('t', 's', {
        name: 'dated',
        filter: { kind: 'sql', sqlExpression: 'user.at = @when', parameters: { '@when': when } },
        action: { sqlExpression: "SET user.hit = 'yes'" },
      });
      b1.send('t', [
        msg({
          message_id: 'a',
          group_id: 'g1',
          subject: 'subj',
          creation_time: new Date(1_650_000_000_000),
          message_annotations: { 'x-opt-partition-key': 'pk' },
          body: rhea.message.data_section(Buffer.from([1, 2, 3])),
          props: { n: 1, at: when },
        }),
        msg({ message_id: 'b', group_id: 'g1' }),
        msg({ message_id: 'c', group_id: 'g2' }),
      ]);
      b1.schedule('t', [msg({ message_id: 'sched' })], [clock.t + 60_000]);
      const r = await b1.openReceiver({ source: src, mode: 'peekLock' });
      const got = r.take(10);
      assert.equal(got.length, 4, 'three plain copies and one from the dated rule');
      const byId = (id: string) => got.find((d) => d.message.message_id === id && props(d).hit === undefined);
      b1.settle(src, byId('a')?.lockToken ?? '', { kind: 'abandon' });
      b1.settle(src, byId('b')?.lockToken ?? '', { kind: 'defer' });
      b1.settle(src, byId('c')?.lockToken ?? '', { kind: 'deadLetter', reason: 'R', description: 'D' });
      const hit = got.find((d) => props(d).hit === 'yes');
      b1.settle(src, hit?.lockToken ?? '', { kind: 'complete' });
      const sr = await b1.openReceiver({
        source: { topic: 't', subscription: 'sess' },
        mode: 'peekLock',
        session: { sessionId: 'g1', timeoutMs: 0 },
      });
      b1.setSessionState({ topic: 't', subscription: 'sess' }, 'g1', Buffer.from('state-1'));
      sr.close();
      await b1.close();

      const b2 = await createServiceBusBroker(opts);
      assert.deepEqual(
        b2.listRules('t', 's').map((x) => x.name),
        ['$Default', 'dated'],
      );
      const rule = b2.getRule('t', 's', 'dated');
      assert.deepEqual(rule.filter.kind === 'sql' && rule.filter.parameters?.['@when'], when);
      assert.equal(b2.getSubscription('t', 's').lockDurationMs, 30_000);
      assert.equal(b2.getTopic('t').defaultMessageTimeToLiveMs, 3_600_000);
      const rt = b2.getSubscriptionRuntime('t', 's');
      assert.deepEqual(
        [rt.activeMessageCount, rt.deadLetterMessageCount, rt.scheduledMessageCount],
        [2, 1, 1],
      );
      const peeked = b2.peek(src, { fromSequenceNumber: 0, maxCount: 10 });
      assert.deepEqual(
        peeked.map((d) => [d.message.message_id, d.state, d.deliveryCount]),
        [
          ['a', 'active', 1],
          ['b', 'deferred', 0],
        ],
      );
      const a = peeked[0]!;
      assert.equal(a.message.subject, 'subj');
      assert.equal(a.partitionKey, 'pk');
      assert.deepEqual((a.message.body as { content: Buffer }).content, Buffer.from([1, 2, 3]));
      assert.deepEqual(a.message.creation_time, new Date(1_650_000_000_000));
      assert.deepEqual(props(a).at, when);
      const dead = b2.peek({ ...src, subQueue: 'deadLetter' }, { maxCount: 5 });
      assert.deepEqual(props(dead[0]!), { DeadLetterReason: 'R', DeadLetterErrorDescription: 'D' });
      const sr2 = await b2.openReceiver({
        source: { topic: 't', subscription: 'sess' },
        mode: 'peekLock',
        session: { sessionId: 'g1', timeoutMs: 0 },
      });
      assert.equal(b2.getSessionState({ topic: 't', subscription: 'sess' }, 'g1')?.toString(), 'state-1');
      assert.equal(sr2.take(5).length, 2);
      // New sequence numbers continue after the restored ones.
      b2.send('t', [msg({ message_id: 'd' })]);
      const after = b2.peek(src, { fromSequenceNumber: 0, maxCount: 10 }).map((d) => d.sequenceNumber);
      assert.equal(new Set(after).size, after.length);
      assert.ok((after.at(-1) ?? 0) > 4);
      // The scheduled message is still due later.
      clock.advance(60_000);
      b2.runDueWork();
      assert.equal(b2.getSubscriptionRuntime('t', 's').scheduledMessageCount, 0);
      await b2.close();
    });
  });

  test('a send that returned is on disk even when the process dies without close()', async () => {
    await inTempDir('nimbus-broker-', async (dir) => {
      const b1 = await createServiceBusBroker({ dataDir: dir });
      b1.createTopic({ name: 't' });
      b1.createSubscription({ topicName: 't', subscriptionName: 's' });
      b1.send('t', [msg({ message_id: 'durable' }), msg({ message_id: 'locked' })]);
      const r = await b1.openReceiver({ source: src, mode: 'peekLock' });
      r.take(1); // 'durable' is locked when the "crash" happens
      // No close(): simulate a kill by opening the directory again while b1 is abandoned.
      const b2 = await createServiceBusBroker({ dataDir: dir });
      const peeked = b2.peek(src, { maxCount: 10 });
      assert.deepEqual(
        peeked.map((d) => [d.message.message_id, d.deliveryCount]),
        [
          ['durable', 1],
          ['locked', 0],
        ],
        'the lost lock counts as a delivery',
      );
      await b2.close();
    });
  });

  test('a deferred message locked by sequence number counts the lost lock after a crash', async () => {
    await inTempDir('nimbus-broker-', async (dir) => {
      const b1 = await createServiceBusBroker({ dataDir: dir });
      b1.createTopic({ name: 't' });
      b1.createSubscription({ topicName: 't', subscriptionName: 's', maxDeliveryCount: 1 });
      b1.send('t', [msg({ message_id: 'parked' })]);
      const [d] = (await b1.openReceiver({ source: src, mode: 'peekLock' })).take(1);
      b1.settle(src, d?.lockToken ?? '', { kind: 'defer' });
      b1.receiveDeferred(src, [d!.sequenceNumber], 'peekLock'); // locked when the "crash" happens
      // No close() (its snapshot would record the lock): open the directory again while b1 is abandoned.
      const b2 = await createServiceBusBroker({ dataDir: dir });
      const rt = b2.getSubscriptionRuntime('t', 's');
      assert.deepEqual(
        [rt.activeMessageCount, rt.deadLetterMessageCount],
        [0, 1],
        'the lost lock was the last allowed delivery',
      );
      await b2.close();
    });
  });

  test('a torn last journal line is ignored; compaction keeps the state and bounds the journal', async () => {
    await inTempDir('nimbus-broker-', async (dir) => {
      const b1 = await createServiceBusBroker({ dataDir: dir }, { compactBytes: 8192 });
      b1.createTopic({ name: 't' });
      b1.createSubscription({ topicName: 't', subscriptionName: 's' });
      const r = await b1.openReceiver({ source: src, mode: 'receiveAndDelete' });
      for (let i = 0; i < 200; i++) {
        b1.send('t', [msg({ message_id: `m${i}` })]);
        if (i % 2 === 0) r.take(1);
      }
      const gen = journalGeneration(dir);
      assert.ok(gen > 2, 'the journal was compacted several times');
      appendFileSync(join(dir, journalFile(gen)), '{"k":"put","t":"t","s":"s","q":"ma');
      const b2 = await createServiceBusBroker({ dataDir: dir });
      assert.equal(b2.getSubscriptionRuntime('t', 's').activeMessageCount, 100);
      // A torn write was never acknowledged: nothing is lost, so nothing is kept aside.
      assert.deepEqual(
        readdirSync(dir).filter((f) => f.includes('damaged')),
        [],
      );
      assert.deepEqual(
        b2.peek(src, { maxCount: 2 }).map((d) => d.message.message_id),
        ['m100', 'm101'],
      );
      await b2.close();
    });
  });

  test('an operation torn in the middle is replayed not at all: a dead-letter move keeps its message', async () => {
    await inTempDir('nimbus-broker-', async (dir) => {
      const b1 = await createServiceBusBroker({ dataDir: dir });
      b1.createTopic({ name: 't' });
      b1.createSubscription({ topicName: 't', subscriptionName: 's' });
      b1.send('t', [msg({ message_id: 'moved' })]);
      const [d] = (await b1.openReceiver({ source: src, mode: 'peekLock' })).take(1);
      b1.settle(src, d?.lockToken ?? '', { kind: 'deadLetter', reason: 'R' });
      // No close(). The move was written as `del` then `put`: cut the write inside the `put`, as a crash would.
      const path = join(dir, journalFile(journalGeneration(dir)));
      const text = readFileSync(path, 'utf8');
      const put = text.lastIndexOf('{"k":"put"');
      assert.ok(put > text.lastIndexOf('{"k":"del"') && text.lastIndexOf('{"k":"del"') > 0);
      writeFileSync(path, text.slice(0, put + 20));
      const b2 = await createServiceBusBroker({ dataDir: dir });
      const rt = b2.getSubscriptionRuntime('t', 's');
      assert.deepEqual([rt.activeMessageCount, rt.deadLetterMessageCount], [1, 0], 'the message is not lost');
      await b2.close();
    });
  });

  test('an operation of more records than a call takes arguments is replayed, and so is every line after it', async () => {
    await inTempDir('nimbus-broker-', async (dir) => {
      const b1 = await createServiceBusBroker({ dataDir: dir });
      b1.createTopic({ name: 't' });
      b1.createSubscription({ topicName: 't', subscriptionName: 's' });
      b1.send('t', [msg({ message_id: 'before' })]);
      const seq = b1.peek(src, { maxCount: 1 })[0]?.sequenceNumber;
      b1.send('t', [msg({ message_id: 'after' })]);
      // No close(). Between the two sends, put one line as an expiry sweep of 140k due messages writes it
      // (built directly: sending them is slow); its last `del` removes 'before'.
      const dels = Array.from({ length: 140_000 }, (_, i) => ({
        k: 'del',
        t: 't',
        s: 's',
        q: 'main',
        seq: i + 1_000,
      }));
      dels.push({ k: 'del', t: 't', s: 's', q: 'main', seq: seq! });
      insertBeforeLastLine(dir, JSON.stringify(dels));
      const b2 = await createServiceBusBroker({ dataDir: dir });
      assert.deepEqual(
        b2.peek(src, { maxCount: 5 }).map((m) => m.message.message_id),
        ['after'],
      );
      await b2.close();
    });
  });

  test('a bad line followed by good ones is reported as corruption, not as a torn tail', async () => {
    await inTempDir('nimbus-broker-', async (dir) => {
      const errors: string[] = [];
      const warnings: string[] = [];
      const log = {
        info() {},
        debug() {},
        warn: (_o: object, m: string) => warnings.push(m),
        error: (_o: object, m: string) => errors.push(m),
      };
      const b1 = await createServiceBusBroker({ dataDir: dir });
      b1.createTopic({ name: 't' });
      b1.createSubscription({ topicName: 't', subscriptionName: 's' });
      b1.send('t', [msg({ message_id: 'after' })]);
      insertBeforeLastLine(dir, '[{"k":"put","t":"t"');
      const b2 = await createServiceBusBroker({ dataDir: dir, log });
      assert.deepEqual(errors, [
        'journal is corrupt in the middle; this and every later operation are not replayed',
      ]);
      assert.deepEqual(warnings, []);
      await b2.close();
    });
  });

  test('a journal damaged in the middle is kept aside with its bytes, named in the log, and never replayed or deleted later', async () => {
    await inTempDir('nimbus-broker-', async (dir) => {
      const errors: Array<{ o: Record<string, unknown>; m: string }> = [];
      const warnings: string[] = [];
      const log = {
        info() {},
        debug() {},
        warn: (_o: object, m: string) => warnings.push(m),
        error: (o: object, m: string) => errors.push({ o: o as Record<string, unknown>, m }),
      };
      const b1 = await createServiceBusBroker({ dataDir: dir });
      b1.createTopic({ name: 't' });
      b1.createSubscription({ topicName: 't', subscriptionName: 's' });
      b1.send('t', [msg({ message_id: 'before' })]);
      b1.send('t', [msg({ message_id: 'after' })]);
      // No close(). Lines: topic, sub, put 'before', damage, put 'after' (acknowledged, but not replayable).
      insertBeforeLastLine(dir, '[{"k":"put","t":"t"');
      const gen = journalGeneration(dir);
      const original = readFileSync(join(dir, journalFile(gen)));

      const b2 = await createServiceBusBroker({ dataDir: dir, log });
      assert.deepEqual(peekIds(b2), ['before'], 'replay still stops at the damage');
      assert.deepEqual(
        errors.map((e) => e.m),
        ['journal is corrupt in the middle; this and every later operation are not replayed'],
      );
      const { kept, line, dropped } = errors[0]!.o;
      assert.deepEqual([line, dropped], [4, 2]);
      assert.equal(typeof kept, 'string', 'the log names the kept file');
      const keptName = String(kept).slice(dir.length + 1);
      assert.equal(join(dir, keptName), kept, 'kept in the data directory');
      assert.match(keptName, new RegExp(`^journal-${gen}\\.damaged-.+\\.jsonl$`));
      assert.deepEqual(readFileSync(String(kept)), original, 'the kept file holds the journal byte for byte');
      b2.send('t', [msg({ message_id: 'later' })]);
      await b2.close();

      errors.length = 0;
      const b3 = await createServiceBusBroker({ dataDir: dir, log });
      assert.deepEqual(peekIds(b3), ['before', 'later'], "the kept file's 'after' is not replayed");
      assert.deepEqual([errors, warnings], [[], []]);
      assert.deepEqual(readFileSync(String(kept)), original, 'a second start leaves the kept file alone');
      const journals = readdirSync(dir).filter((f) => /^journal-\d+\.jsonl$/.test(f));
      assert.equal(journals.length, 1);
      await b3.close();
    });
  });

  test('a journal written one record per line (before operations were one line) is still read', async () => {
    await inTempDir('nimbus-broker-', async (dir) => {
      const b1 = await createServiceBusBroker({ dataDir: dir });
      b1.createTopic({ name: 't' });
      b1.createSubscription({ topicName: 't', subscriptionName: 's' });
      b1.send('t', [msg({ message_id: 'a' }), msg({ message_id: 'b' })]);
      const path = join(dir, journalFile(journalGeneration(dir)));
      const lines = readFileSync(path, 'utf8')
        .split('\n')
        .filter((l) => l.length > 0);
      const old = lines.flatMap((l) => (JSON.parse(l) as unknown[]).map((r) => JSON.stringify(r)));
      assert.ok(old.length > lines.length, 'operations of several records were rewritten one record a line');
      writeFileSync(path, old.join('\n') + '\n');
      const b2 = await createServiceBusBroker({ dataDir: dir });
      assert.deepEqual(
        b2.peek(src, { maxCount: 5 }).map((m) => m.message.message_id),
        ['a', 'b'],
      );
      await b2.close();
    });
  });

  test('a stored message that cannot be decoded is kept in every later snapshot, not erased', async () => {
    await inTempDir('nimbus-broker-', async (dir) => {
      const b1 = await createServiceBusBroker({ dataDir: dir });
      b1.createTopic({ name: 't' });
      b1.createSubscription({ topicName: 't', subscriptionName: 's' });
      b1.send('t', [msg({ message_id: 'unreadable' }), msg({ message_id: 'fine' })]);
      await b1.close();
      const path = join(dir, 'snapshot.jsonl');
      const broken = breakFirstRecord(dir, 'put', (r) => ({ ...r, m: 'AAAA' }));
      // Twice: the start-up compaction and the close both write a snapshot without decoding the message.
      for (let i = 0; i < 2; i++) {
        const b = await createServiceBusBroker({ dataDir: dir });
        assert.deepEqual(peekIds(b), ['fine']);
        await b.close();
      }
      assert.deepEqual(
        snapshotRecords(dir, 'put').find((r) => r.m === 'AAAA'),
        broken,
      );
      // Deleting its subscription deletes it too: a new subscription of that name does not inherit it.
      const b3 = await createServiceBusBroker({ dataDir: dir });
      b3.deleteSubscription('t', 's');
      b3.createSubscription({ topicName: 't', subscriptionName: 's' });
      await b3.close();
      assert.ok(!readFileSync(path, 'utf8').includes('"m":"AAAA"'));
    });
  });

  test('a scheduled message that cannot be decoded does not stop start-up; it is kept until cancelled', async () => {
    await inTempDir('nimbus-broker-', async (dir) => {
      const clock = new FakeClock();
      const opts: BrokerOptions = { dataDir: dir, now: clock.now };
      const b1 = await createServiceBusBroker(opts);
      b1.createTopic({ name: 't' });
      b1.createSubscription({ topicName: 't', subscriptionName: 's' });
      const [badSeq] = b1.schedule(
        't',
        [msg({ message_id: 'unreadable' }), msg({ message_id: 'fine' })],
        [clock.t + 60_000, clock.t + 60_000],
      );
      await b1.close();
      // Cut the last bytes off the first scheduled record's message (its body): decoding it throws.
      const path = join(dir, 'snapshot.jsonl');
      const broken = breakFirstRecord(dir, 'sch', (r) => {
        const bytes = Buffer.from(r.m as string, 'base64');
        return { ...r, m: bytes.subarray(0, bytes.length - 3).toString('base64') };
      });
      assert.equal(broken.seq, badSeq);
      // Twice: the start-up compaction and the close both write a snapshot without decoding the message.
      for (let i = 0; i < 2; i++) {
        const b = await createServiceBusBroker(opts);
        assert.deepEqual(peekIds(b), i === 0 ? [] : ['fine']);
        tick(b, clock, 60_000);
        assert.deepEqual(peekIds(b), ['fine']);
        await b.close();
      }
      assert.deepEqual(snapshotRecords(dir, 'sch'), [broken]);
      // It is still scheduled, so cancelling it by its sequence number succeeds, as on Azure, and removes it.
      const withBroken = readFileSync(path, 'utf8');
      const b3 = await createServiceBusBroker(opts);
      b3.cancelScheduled('t', [badSeq!]);
      await b3.close();
      assert.ok(!readFileSync(path, 'utf8').includes('"k":"sch"'));
      // Deleting its entity deletes it too: a new topic of that name does not inherit it.
      writeFileSync(path, withBroken);
      const b4 = await createServiceBusBroker(opts);
      b4.deleteTopic('t');
      b4.createTopic({ name: 't' });
      await b4.close();
      assert.ok(!readFileSync(path, 'utf8').includes('"k":"sch"'));
    });
  });

  test('a message locked at the last allowed delivery is dead-lettered on restart', async () => {
    await inTempDir('nimbus-broker-', async (dir) => {
      const b1 = await createServiceBusBroker({ dataDir: dir });
      b1.createTopic({ name: 't' });
      b1.createSubscription({ topicName: 't', subscriptionName: 's', maxDeliveryCount: 1 });
      b1.send('t', [msg({ message_id: 'x' })]);
      (await b1.openReceiver({ source: src, mode: 'peekLock' })).take(1);
      await b1.close();
      const b2 = await createServiceBusBroker({ dataDir: dir });
      const rt = b2.getSubscriptionRuntime('t', 's');
      assert.deepEqual([rt.activeMessageCount, rt.deadLetterMessageCount], [0, 1]);
      await b2.close();
    });
  });
});
