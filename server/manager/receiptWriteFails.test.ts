// A command that reached the broker, whose "sent" receipt (the event's audit entry under the command's id) cannot be
// written because the store fails right after the send. The command is on the broker and will run: it is answered
// sent (the audit log says succeeded, a bulk counts it sent), the receipt retried and, still failing, remembered by
// the Manager, so a repeat in the same process is 'duplicate' and writes it then. Before, the operator was answered
// 503 "try again" and the audit log recorded the skip as failed (the first two tests, failing on that code).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Prop } from '@nimbus/sdk/contract';
import { StoreTransientError, type AuditWrite } from '../../lib/store/index.ts';
import { seedEvent } from '../testing/seed.ts';
import { useConsoleStack } from '../testing/consoleStack.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const stack = useConsoleStack({ database: 'rvreceiptfails', seed: true });

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const post = (body?: unknown) =>
  new Request('http://127.0.0.1/api/x', { method: 'POST', headers: { 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });

/** Makes the console's store fail every write of a command's receipt (ids `mgr-…`), as a Cosmos outage would. */
async function failReceipts(): Promise<() => void> {
  const { getContext } = await import('../context.ts');
  const store = (await getContext()).store;
  const one = store.recordAudit.bind(store);
  const many = store.recordAudits.bind(store);
  store.recordAudit = async (input: AuditWrite) => {
    if (input.id?.startsWith('mgr-')) throw new StoreTransientError('store timed out during audit write');
    return one(input);
  };
  store.recordAudits = async (inputs: readonly AuditWrite[]) =>
    Promise.all(inputs.map(async (i) => (i.id?.startsWith('mgr-') ? { ok: false as const, error: new StoreTransientError('store timed out during audit write') } : (await many([i]))[0]!)));
  return () => {
    store.recordAudit = one;
    store.recordAudits = many;
  };
}

async function onBroker(endpointId: string, sessionId: string): Promise<string[]> {
  const receiver = await stack.serviceBus.client.acceptSession(endpointId, endpointId, sessionId);
  try {
    const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 3000 });
    for (const m of got) await receiver.completeMessage(m);
    return got.map((m) => String(m.applicationProperties?.[Prop.MessageType]));
  } finally {
    await receiver.close();
  }
}

describe('a command sent whose receipt write fails', () => {
  test('single skip: the command is on the broker, answered 200 and logged succeeded', async () => {
    const restore = await failReceipts();
    let res: Response;
    try {
      const skip = await import('../../app/api/event/skip/[endpointId]/[eventId]/route.ts');
      res = await skip.POST(post(), params({ endpointId: 'billingendpoint', eventId: 'evt-failed-1' }));
    } finally {
      restore();
    }
    const text = await res.clone().text();
    // The skip went out: the endpoint's session holds it.
    assert.deepEqual(await onBroker('billingendpoint', 'ORD-200'), [MessageType.SkipRequest], 'the skip command was sent');
    const { queryAudit } = await import('../audit/auditLog.ts');
    const entries = (await queryAudit(stack.store.database, { action: 'skip', eventId: 'evt-failed-1', pageSize: 10 })).items;
    // What the operator is told, and what the audit log keeps, about a skip that did go out.
    assert.deepEqual(
      { status: res.status, logged: entries.map((e) => `${e.outcome} ${e.status}`) },
      { status: 200, logged: ['succeeded 200'] },
      `the answer was ${res.status} ${text}; the audit log holds ${JSON.stringify(entries.map((e) => ({ outcome: e.outcome, status: e.status, reason: e.reason })))}`,
    );
  });

  test('bulk skip (POST /api/event/skip): the command is on the broker and the event counted sent', async () => {
    const restore = await failReceipts();
    let res: Response;
    try {
      const bulk = await import('../../app/api/event/skip/route.ts');
      res = await bulk.POST(post({ endpointId: 'billingendpoint', eventIds: ['evt-dead-1'] }));
    } finally {
      restore();
    }
    const body = (await res.json()) as { sent: number; failed: number; results: unknown[] };
    assert.deepEqual(await onBroker('billingendpoint', 'ORD-300'), [MessageType.SkipRequest], 'the skip command was sent');
    assert.deepEqual({ sent: body.sent, failed: body.failed }, { sent: 1, failed: 0 }, `answered ${res.status} ${JSON.stringify(body)}`);
  });

  test('a repeat in the same process is answered duplicate, writes the lost receipt and sends nothing again', async () => {
    const eventId = 'evt-receipt-repeat';
    await seedEvent(stack.store, Date.now() - 60_000, { endpointId: 'billingendpoint', eventId, sessionId: 'ORD-REP', eventTypeId: 'OrderPlaced', payload: { orderId: 'ORD-REP' } }, MessageType.ErrorResponse, { errorText: 'boom', errorType: 'X' });
    const skip = await import('../../app/api/event/skip/[endpointId]/[eventId]/route.ts');
    const restore = await failReceipts();
    let first: Response;
    try {
      first = await skip.POST(post(), params({ endpointId: 'billingendpoint', eventId }));
    } finally {
      restore();
    }
    assert.equal(first.status, 200, await first.clone().text());
    const sent = (await first.json()) as { outcome: string; messageId: string };
    assert.equal(sent.outcome, 'sent');
    assert.equal(await stack.store.getAudit(eventId, sent.messageId), null, 'no receipt yet: every write of it failed');
    // Within CLAIM_GRACE_MS, not recorded by a Resolver: a claim without a receipt would be refused "being sent right
    // now", and past it re-sent; this process knows it sent it.
    const again = await skip.POST(post(), params({ endpointId: 'billingendpoint', eventId }));
    const repeat = (await again.json()) as { outcome: string; messageId: string };
    assert.deepEqual([again.status, repeat.outcome, repeat.messageId], [200, 'duplicate', sent.messageId], JSON.stringify(repeat));
    const receipt = await stack.store.getAudit(eventId, sent.messageId);
    assert.equal(receipt?.type, 'Skip', 'the receipt is written by the repeat');
    assert.deepEqual(await onBroker('billingendpoint', 'ORD-REP'), [MessageType.SkipRequest], 'one skip on the broker, not two');
  });
});
