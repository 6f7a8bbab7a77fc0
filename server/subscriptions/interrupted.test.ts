// A replay whose console process is killed midway (SIGKILL, no cleanup), then replayed again: every dead letter
// ends delivered exactly once or still in the queue - none lost, none twice. Copies are counted per MessageId
// where they arrive (the Resolver subscription), so a second copy fails the test. A dead letter whose send
// was in flight at the kill (journal `sending`) is reported uncertain and is not sent again until an operator
// decides; both decisions are exercised.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Prop, Topic } from '@nimbus/sdk/contract';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { peekDeadLetters, type DeadLetterView } from './deadLetters.ts';
import { operationDocName, previewReplay, replayDeadLetters, TOPOLOGY_AUDIT_EVENT, type ReplayOperation } from './replay.ts';
import { ReplayJournal } from './replayJournal.ts';

const CHILD = fileURLToPath(new URL('./testing/replayChild.ts', import.meta.url));

let stack: ConsoleTestStack;
let docs: PlatformDocs;
let journal: ReplayJournal;
before(async () => {
  stack = await startConsoleTestStack();
  docs = new PlatformDocs({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: 'nimbus' });
  journal = new ReplayJournal(stack.store.database);
});
after(async () => {
  docs?.close();
  await stack?.close();
});

/**
 * Where one test works: a topic and its subscription of the same name (the Resolver's, or an endpoint's main
 * one), one session and one dead-letter reason, so the tests can run side by side without mixing.
 */
interface Lane {
  T: string;
  session: string;
  reason: string;
}
const lane = (T: string, name: string): Lane => ({ T, session: `replay-${randomUUID()}`, reason: `${name}-${randomUUID()}` });

/** N dead letters on the lane's subscription. */
async function deadLetters({ T, session, reason }: Lane, n: number): Promise<string[]> {
  const sent: string[] = [];
  const sender = stack.serviceBus.client.createSender(T);
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    sent.push(id);
    await sender.sendMessages({ messageId: id, sessionId: session, body: Buffer.from('{}'), applicationProperties: { [Prop.To]: T, [Prop.ThrottleRetryCount]: 1 } });
  }
  await sender.close();
  const receiver = await stack.serviceBus.client.acceptSession(T, T, session);
  let dead = 0;
  while (dead < n) {
    for (const m of await receiver.receiveMessages(n - dead, { maxWaitTimeInMs: 5000 })) {
      await receiver.deadLetterMessage(m, { deadLetterReason: reason, deadLetterErrorDescription: 'x' });
      dead++;
    }
  }
  await receiver.close();
  return sent;
}

async function inQueue({ T, reason }: Lane): Promise<DeadLetterView[]> {
  const out: DeadLetterView[] = [];
  let from: string | undefined;
  for (;;) {
    const page = await peekDeadLetters(stack.serviceBus.client, T, T, { pageSize: 100, reason, ...(from ? { from } : {}) });
    out.push(...page.items);
    if (!page.next || page.scanned === 0) return out;
    from = page.next;
  }
}

/** Receives every copy that arrived in the lane's session and adds it to the per-MessageId count. */
async function drainCopies({ T, session }: Lane, copies: Map<string, number>): Promise<void> {
  const receiver = await stack.serviceBus.client.acceptSession(T, T, session);
  try {
    for (;;) {
      const got = await receiver.receiveMessages(50, { maxWaitTimeInMs: 1000 });
      if (got.length === 0) return;
      for (const m of got) {
        const id = String(m.messageId);
        copies.set(id, (copies.get(id) ?? 0) + 1);
        await receiver.completeMessage(m);
      }
    }
  } finally {
    await receiver.close();
  }
}

async function runChild({ T, reason }: Lane, operationId: string, extraEnv: Record<string, string>, killWhen?: (op: ReplayOperation) => boolean): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: { ...process.env, ...stack.env, ...extraEnv, REPLAY_TOPIC: T, REPLAY_SUBSCRIPTION: T, REPLAY_REASON: reason, REPLAY_OPERATION: operationId, NIMBUS_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let gone = false;
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('exit', (_code, signal) => {
      gone = true;
      resolve(signal);
    }),
  );
  if (killWhen) {
    // Until the condition holds or the child ends by itself (which the assertion below then reports).
    while (!gone) {
      const op = await docs.read<ReplayOperation>(operationDocName(operationId));
      if (op && killWhen(op.value)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    child.kill('SIGKILL');
  }
  assert.equal(await exited, 'SIGKILL', 'the replaying process was killed, not finished');
}

const replayAgain = ({ T, reason }: Lane, extra: { sequenceNumbers?: string[]; uncertain?: 'resend' | 'markDelivered' } = {}) =>
  replayDeadLetters(
    { client: stack.serviceBus.client, store: stack.store, journal, docs, receiveWaitMs: 1000 },
    { topic: T, subscription: T, selection: extra.sequenceNumbers ? { ...extra } : { all: true, reason }, auditor: 'tester' },
  );

/** Replays (as the operator would, again and again) until only uncertain dead letters are left. */
async function replayUntilOnlyUncertainLeft(l: Lane, copies: Map<string, number>): Promise<ReplayOperation[]> {
  const { T, reason } = l;
  const ops: ReplayOperation[] = [];
  // The killed process's locks expire after the test subscription's 5 s lock duration; until then a pass finds nothing.
  for (let pass = 0; pass < 30; pass++) {
    const pv = await previewReplay(stack.serviceBus.client, stack.serviceBus.admin, journal, T, T, { all: true, reason });
    if (pv.toSend + pv.alreadySent === 0) break;
    const op = await replayAgain(l);
    assert.equal(op.failed, 0);
    ops.push(op);
    await drainCopies(l, copies);
  }
  return ops;
}

// The three run side by side, each on its own topic: a killed process's locks take the lock duration to expire.
describe('interrupted replay', { concurrency: true }, () => {
  test('a replay killed midway, then replayed again: each dead letter delivered exactly once or still in the queue', async () => {
    const N = 40;
    const l = lane(Topic.Resolver, 'Killed');
    const { T } = l;
    const sent = await deadLetters(l, N);
    const operationId = randomUUID();
    await runChild(l, operationId, {}, (op) => op.replayed >= 3);

    const copies = new Map<string, number>();
    await drainCopies(l, copies);
    const firstRound = [...copies.keys()];
    assert.ok(firstRound.length > 0 && firstRound.length < N, `killed midway (${firstRound.length} of ${N} delivered)`);
    const afterKill = (await inQueue(l)).map((d) => d.messageId!);
    assert.deepEqual(new Set([...afterKill, ...firstRound]), new Set(sent), 'nothing lost');

    await replayUntilOnlyUncertainLeft(l, copies);

    for (const [id, n] of copies) assert.equal(n, 1, `MessageId ${id} arrived ${n} times`);
    const left = await inQueue(l);
    const leftIds = new Set(left.map((d) => d.messageId!));
    for (const id of sent) assert.ok(copies.get(id) === 1 || leftIds.has(id), `${id} is neither delivered nor in the queue`);
    // Whatever is left is exactly what the journal calls uncertain (its send was in flight at the kill).
    const pv = await previewReplay(stack.serviceBus.client, stack.serviceBus.admin, journal, T, T, { all: true, reason: l.reason }, docs);
    assert.equal(pv.uncertain, left.length);
    assert.deepEqual(new Set(pv.uncertainItems.map((u) => u.messageId)), leftIds);
    for (const u of pv.uncertainItems) assert.equal(u.operationId, operationId, 'the evidence names the killed replay');
    assert.ok(left.length <= 1, 'at most the one dead letter in flight at the kill is uncertain');
  });

  test('killed after the send went out: uncertain, not resent by a replay, removed without a second copy on "mark delivered"', async () => {
    const l = lane('billingendpoint', 'AfterSend');
    const { T } = l;
    const sent = await deadLetters(l, 6);
    const operationId = randomUUID();
    await runChild(l, operationId, { REPLAY_DIE_AFTER_SEND: '3' });

    const copies = new Map<string, number>();
    await drainCopies(l, copies);
    assert.equal(copies.size, 3, 'three copies went out before the kill');
    const [inFlight] = (await inQueue(l)).filter((d) => copies.has(d.messageId!));
    assert.ok(inFlight, 'the third dead letter was sent but not completed');

    const ops = await replayUntilOnlyUncertainLeft(l, copies);
    // The preview (a peek) calls it uncertain at once, but a replay meets it only once the killed process's lock on it
    // has expired, which can be after the other dead letters were replayed and the loop above stopped (a loaded
    // machine): replay again until a pass has met it.
    const metInFlight = (o: ReplayOperation) => o.uncertain === 1 && o.uncertainSequenceNumbers.includes(inFlight.sequenceNumber);
    for (let pass = 0; pass < 30 && !ops.some(metInFlight); pass++) {
      ops.push(await replayAgain(l));
      await drainCopies(l, copies);
    }
    assert.ok(ops.some(metInFlight), 'the replay reported it uncertain');
    assert.equal(copies.get(inFlight.messageId!), 1, 'not resent without a decision');
    assert.deepEqual((await inQueue(l)).map((d) => d.messageId), [inFlight.messageId]);
    const pv = await previewReplay(stack.serviceBus.client, stack.serviceBus.admin, journal, T, T, { all: true, reason: l.reason }, docs);
    assert.deepEqual([pv.count, pv.uncertain, pv.toSend], [1, 1, 0]);
    assert.equal(pv.uncertainItems[0]!.operationId, operationId);
    assert.equal(pv.uncertainItems[0]!.auditor, 'child');

    const decided = await replayAgain(l, { sequenceNumbers: [inFlight.sequenceNumber], uncertain: 'markDelivered' });
    assert.deepEqual([decided.decided, decided.replayed], [1, 0]);
    await drainCopies(l, copies);
    assert.deepEqual(await inQueue(l), []);
    for (const id of sent) assert.equal(copies.get(id), 1, `${id} delivered exactly once`);
    const audits = await stack.store.listAudits(TOPOLOGY_AUDIT_EVENT, { pageSize: 100 });
    assert.ok(audits.items.some((a) => a.type === 'ReplayUncertainDecision' && a.id === `replay-${decided.id}`), 'the decision is audited');
    const record = await journal.get({ topic: T, subscription: T, sequenceNumber: inFlight.sequenceNumber, messageId: inFlight.messageId });
    assert.equal(record?.record.state, 'done');
    assert.equal(record?.record.decision?.kind, 'markDelivered');
    assert.equal(record?.record.decision?.previousOperationId, operationId);
  });

  test('killed after the claim, before the send: uncertain until the operator decides to resend, then delivered once', async () => {
    const l = lane('crmendpoint', 'AfterClaim');
    const sent = await deadLetters(l, 4);
    await runChild(l, randomUUID(), { REPLAY_DIE_AFTER_CLAIM: '2' });

    const copies = new Map<string, number>();
    await replayUntilOnlyUncertainLeft(l, copies);
    const left = await inQueue(l);
    assert.equal(left.length, 1, 'the claimed one waits for a decision');
    assert.equal(copies.get(left[0]!.messageId!), undefined, 'and was not sent');
    // A decision must name dead letters; a filter replay never applies one.
    const filtered = await replayAgain(l);
    assert.deepEqual([filtered.replayed, filtered.uncertain], [0, 1]);

    const decided = await replayAgain(l, { sequenceNumbers: [left[0]!.sequenceNumber], uncertain: 'resend' });
    assert.deepEqual([decided.decided, decided.replayed], [1, 1]);
    await drainCopies(l, copies);
    assert.deepEqual(await inQueue(l), []);
    for (const id of sent) assert.equal(copies.get(id), 1, `${id} delivered exactly once`);
  });
});
