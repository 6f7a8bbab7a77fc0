// A replay whose console process is killed midway (SIGKILL, no cleanup): every dead letter is still in the
// queue or was delivered; a copy was delivered at most once, except the one whose send had gone out when the
// process died, which is also still in the queue (its completion never happened). Replaying the rest then
// delivers everything, and that one message arrives a second time with the same MessageId - the Resolver's
// history and the SDK inbox are keyed on it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Prop, Topic } from '../../lib/contract/index.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { peekDeadLetters } from './deadLetters.ts';
import { operationDocName, replayDeadLetters, type ReplayOperation } from './replay.ts';

const CHILD = fileURLToPath(new URL('./testing/replayChild.ts', import.meta.url));
const N = 40;
const SESSION = `replay-${randomUUID()}`;

let stack: ConsoleTestStack;
let docs: PlatformDocs;
before(async () => {
  stack = await startConsoleTestStack();
  docs = new PlatformDocs({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: 'nimbus' });
});
after(async () => {
  docs?.close();
  await stack?.close();
});

async function allDeadLetterIds(): Promise<string[]> {
  const ids: string[] = [];
  let from: string | undefined;
  for (;;) {
    const page = await peekDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver, { pageSize: 100, ...(from ? { from } : {}) });
    ids.push(...page.items.map((i) => i.messageId!));
    if (!page.next || page.items.length === 0) return ids;
    from = page.next;
  }
}

async function drainDelivered(): Promise<string[]> {
  const receiver = await stack.serviceBus.client.acceptSession(Topic.Resolver, Topic.Resolver, SESSION);
  const ids: string[] = [];
  try {
    for (;;) {
      const got = await receiver.receiveMessages(50, { maxWaitTimeInMs: 1000 });
      if (got.length === 0) return ids;
      for (const m of got) {
        ids.push(String(m.messageId));
        await receiver.completeMessage(m);
      }
    }
  } finally {
    await receiver.close();
  }
}

test('a replay killed midway loses nothing and delivers each dead letter once (plus at most the one in flight)', async () => {
  const sent: string[] = [];
  const sender = stack.serviceBus.client.createSender(Topic.Resolver);
  for (let i = 0; i < N; i++) {
    const id = randomUUID();
    sent.push(id);
    await sender.sendMessages({ messageId: id, sessionId: SESSION, body: Buffer.from('{}'), applicationProperties: { [Prop.To]: 'Resolver', [Prop.ThrottleRetryCount]: 1 } });
  }
  await sender.close();
  const receiver = await stack.serviceBus.client.acceptSession(Topic.Resolver, Topic.Resolver, SESSION);
  let dead = 0;
  while (dead < N) {
    for (const m of await receiver.receiveMessages(N - dead, { maxWaitTimeInMs: 5000 })) {
      await receiver.deadLetterMessage(m, { deadLetterReason: 'CosmosDbThrottled', deadLetterErrorDescription: 'x' });
      dead++;
    }
  }
  await receiver.close();

  const operationId = randomUUID();
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: { ...process.env, ...stack.env, REPLAY_TOPIC: Topic.Resolver, REPLAY_SUBSCRIPTION: Topic.Resolver, REPLAY_OPERATION: operationId, NIMBUS_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Kill it as soon as its progress record shows some, but not all, replayed.
  for (;;) {
    const op = await docs.read<ReplayOperation>(operationDocName(operationId));
    if (op && op.value.replayed >= 3) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  child.kill('SIGKILL');
  await exited;

  const inQueue = await allDeadLetterIds();
  const delivered = await drainDelivered();
  assert.ok(delivered.length > 0 && delivered.length < N, `killed midway (${delivered.length} of ${N} delivered)`);
  assert.equal(new Set(delivered).size, delivered.length, 'no copy delivered twice');
  const both = delivered.filter((id) => inQueue.includes(id));
  assert.ok(both.length <= 1, 'only the message in flight at the kill can be both delivered and still dead-lettered');
  assert.deepEqual(new Set([...inQueue, ...delivered]), new Set(sent), 'nothing lost');
  const op = await docs.read<ReplayOperation>(operationDocName(operationId));
  assert.equal(op?.value.state, 'running', 'the record of a killed replay stays running (the page reports it interrupted)');

  // The rest, once the dead process's locks have expired: replay until the queue is empty.
  const again: string[] = [];
  while ((await allDeadLetterIds()).length > 0) {
    const r = await replayDeadLetters({ client: stack.serviceBus.client, store: stack.store }, { topic: Topic.Resolver, subscription: Topic.Resolver, selection: { all: true }, auditor: 'tester' });
    assert.equal(r.failed, 0);
    again.push(...(await drainDelivered()));
  }
  assert.deepEqual(new Set([...delivered, ...again]), new Set(sent), 'everything delivered');
  assert.equal(delivered.length + again.length - both.length, N, 'each delivered once, plus the in-flight one again with its MessageId');
});
