// The dead-letter replay as the console's route handlers answer it, for the route tests of server/subscriptions: seed
// dead letters on an endpoint's main subscription (mainDeadLetters.ts) and find them in the queue, ask the preview,
// start a replay and wait for it to end, count what arrived on the subscription; and a replay journal record as a
// replay that died leaves it. The stack is read when a function runs (the file's `before` has started it by then).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventually } from '../../../resolver-worker/testHarness.ts';
import type { ConsoleTestStack } from '../../testing/stack.ts';
import { peekDeadLetters, type DeadLetterView } from '../deadLetters.ts';
import type { ReplayOperation, ReplayPreview } from '../replay.ts';
import type { DeadLetterKey, ReplayJournal } from '../replayJournal.ts';
import { deadLetterOnMain, type DeadLetterSeed } from './mainDeadLetters.ts';

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const req = (method: string, body?: unknown) =>
  new Request('http://127.0.0.1/api/x', { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
const routes = {
  replay: () => import('../../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts'),
  preview: () => import('../../../app/api/topology/subscriptions/[topic]/[subscription]/replay/preview/route.ts'),
  operation: () => import('../../../app/api/topology/operations/[operationId]/route.ts'),
};

/** A dead letter's key in the replay journal, on `ep`'s main subscription. */
export const keyOf = (ep: string, d: DeadLetterView): DeadLetterKey => ({ topic: ep, subscription: ep, sequenceNumber: d.sequenceNumber, messageId: d.messageId });

/**
 * Leaves `d` as a replay that died right after its claim leaves it (replay.ts crashPoints.afterClaim): its journal
 * record `sending`, so the console shows it uncertain with "Remove as delivered" / "Resend anyway".
 */
export async function uncertain(journal: ReplayJournal, ep: string, d: DeadLetterView): Promise<void> {
  assert.ok(await journal.claim(keyOf(ep, d), { operationId: randomUUID(), auditor: 'a replay that died' }), 'claimed');
}

export function replayRoutes(stack: Pick<ConsoleTestStack, 'serviceBus'>) {
  /** The dead letters of `ep`'s main subscription among `messageIds`, in the order of `messageIds` (every page read). */
  async function inQueue(ep: string, messageIds: string[]): Promise<DeadLetterView[]> {
    const byId = new Map<string, DeadLetterView>();
    let from: string | undefined;
    for (;;) {
      const page = await peekDeadLetters(stack.serviceBus.client, ep, ep, { pageSize: 100, ...(from ? { from } : {}) });
      for (const d of page.items) if (d.messageId && messageIds.includes(d.messageId)) byId.set(d.messageId, d);
      if (!page.next || page.scanned === 0) break;
      from = page.next;
    }
    return messageIds.flatMap((id) => byId.get(id) ?? []);
  }

  /** Dead-letters each message from `ep`'s main subscription; the dead letters, in order. */
  async function deadLetter(ep: string, seeds: DeadLetterSeed[]): Promise<DeadLetterView[]> {
    await deadLetterOnMain(stack.serviceBus.client, ep, seeds);
    const found = await inQueue(ep, seeds.map(({ message }) => String(message.messageId)));
    assert.equal(found.length, seeds.length, 'every seeded dead letter is in the queue');
    return found;
  }

  async function preview(ep: string, body: unknown): Promise<ReplayPreview> {
    const res = await (await routes.preview()).POST(req('POST', body), params({ topic: ep, subscription: ep }));
    assert.equal(res.status, 200, await res.clone().text());
    return (await res.json()) as ReplayPreview;
  }

  async function postReplay(ep: string, body: unknown): Promise<Response> {
    return (await routes.replay()).POST(req('POST', body), params({ topic: ep, subscription: ep }));
  }

  /** The replay operation once it is no longer running. */
  async function finished(operationId: string): Promise<ReplayOperation> {
    const op = await routes.operation();
    return eventually(async () => {
      const r = (await (await op.GET(req('GET'), params({ operationId }))).json()) as ReplayOperation;
      return r.state === 'running' ? undefined : r;
    }, `replay ${operationId} to end`, 60_000);
  }

  /** Starts a replay (202) and waits for it to end. */
  async function replay(ep: string, body: unknown): Promise<ReplayOperation> {
    const res = await postReplay(ep, body);
    assert.equal(res.status, 202, await res.clone().text());
    return finished(((await res.json()) as { operationId: string }).operationId);
  }

  /** Messages waiting on the endpoint's main subscription: where a replayed copy would arrive. */
  const activeOn = async (ep: string) => (await stack.serviceBus.admin.getSubscriptionRuntimeProperties(ep, ep)).activeMessageCount;

  return { inQueue, deadLetter, preview, postReplay, finished, replay, activeOn };
}
