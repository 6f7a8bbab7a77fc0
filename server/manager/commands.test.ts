import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeBody, MessageType, Prop } from '@nimbus/sdk/contract';
import type { StatusRow } from '../../lib/store/index.ts';
import { auditorFields, buildCommand, commandMessageId } from './commands.ts';
import { auditWriteSchema } from '../../lib/store/schemas.ts';
import { refusal, specOfClaim } from './manager.ts';

const row = (over: Partial<StatusRow> = {}): StatusRow => ({
  id: 'x',
  endpointId: 'billing',
  eventId: 'evt-1',
  sessionId: 'ORD-1',
  status: 'Failed',
  subStatus: null,
  messageType: 'ErrorResponse',
  eventTypeId: 'OrderPlaced',
  lastMessageId: 'err-1',
  parentMessageId: 'req-1',
  originatingMessageId: 'req-0',
  correlationId: 'corr-1',
  from: 'billing',
  to: 'Resolver',
  enqueuedAt: null,
  requestMessageId: 'req-1',
  payload: { a: 1 },
  errorText: 'boom',
  errorType: 'Error',
  deadLetterReason: null,
  deadLetterErrorDescription: null,
  retryCount: null,
  retryLimit: null,
  handoffReason: null,
  externalJobId: null,
  expectedBy: null,
  blockedBy: null,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  eventIdLower: 'evt-1',
  sessionIdLower: 'ord-1',
  ...over,
});

describe('Manager commands', () => {
  test('a resubmission carries the session, lineage and payload, and no From (the broker stamps it)', () => {
    const r = row();
    const c = buildCommand({ kind: 'resubmit' }, r, r.lastMessageId, 'OrderPlaced', { a: 1 }, 'anonymous');
    assert.equal(c.message.sessionId, 'ORD-1');
    assert.equal(c.message.correlationId, 'corr-1');
    const p = c.message.applicationProperties!;
    assert.equal(p[Prop.To], 'billing');
    assert.equal(p[Prop.MessageType], MessageType.ResubmissionRequest);
    assert.equal(p[Prop.EventId], 'evt-1');
    assert.equal(p[Prop.ParentMessageId], 'err-1');
    assert.equal(p[Prop.OriginatingMessageId], 'req-0');
    assert.equal(p[Prop.From], undefined);
    const body = decodeBody(c.message.body);
    assert.ok(body.ok);
    assert.equal(body.content.EventContent?.EventTypeId, 'OrderPlaced');
    assert.deepEqual(JSON.parse(body.content.EventContent!.EventJson!), { a: 1 });
  });

  test('the message id is the same for the same command on the same failed message, different otherwise', () => {
    const r = row();
    const a = commandMessageId(MessageType.ResubmissionRequest, r, 'err-1');
    assert.equal(a, commandMessageId(MessageType.ResubmissionRequest, r, 'err-1'));
    assert.notEqual(a, commandMessageId(MessageType.SkipRequest, r, 'err-1'));
    assert.notEqual(a, commandMessageId(MessageType.ResubmissionRequest, r, 'err-2'));
    assert.ok(a.length <= 128);
  });

  test('a handoff failure carries the operator text as ErrorContent', () => {
    const r = row({ status: 'Pending', subStatus: 'Handoff', lastMessageId: 'ho-1' });
    const c = buildCommand({ kind: 'handoffFail', messageId: 'ho-1', errorText: 'rejected', errorType: 'LedgerError' }, r, 'ho-1', 'OrderPlaced', undefined, 'op');
    const body = decodeBody(c.message.body);
    assert.equal(body.content.ErrorContent?.ErrorText, 'rejected');
    assert.equal(body.content.ErrorContent?.ErrorType, 'LedgerError');
    assert.equal(c.message.applicationProperties?.[Prop.MessageType], MessageType.HandoffFailedRequest);
  });

  test('a handoff command names the delivery that handed the event off, not the row version it answers', () => {
    // The handoff row as the Resolver records the PendingHandoffResponse, and as it restores it after a refused
    // command (under the refusal notice's id, with the response's parent kept).
    const parked = row({ status: 'Pending', subStatus: 'Handoff', messageType: 'PendingHandoffResponse', lastMessageId: 'ho-1', parentMessageId: 'resubmit-1' });
    const restored = { ...parked, lastMessageId: 'notice-1' };
    for (const [r, spec] of [
      [parked, { kind: 'handoffComplete', messageId: 'ho-1' }],
      [restored, { kind: 'handoffFail', messageId: 'notice-1', errorText: 'x' }],
    ] as const) {
      const p = buildCommand(spec, r, r.lastMessageId, 'OrderPlaced', undefined, 'op').message.applicationProperties!;
      assert.equal(p[Prop.HandedOffByMessageId], 'resubmit-1');
      assert.equal(p[Prop.ParentMessageId], r.lastMessageId, 'ParentMessageId stays the version the claim answers');
    }
    // A repeat re-sends from the claim row, which no longer says which delivery handed the event off: nothing named.
    const claim = row({ status: 'Pending', messageType: 'HandoffCompletedRequest', lastMessageId: 'mgr-1', parentMessageId: 'ho-1' });
    const resent = buildCommand({ kind: 'handoffComplete', messageId: 'ho-1' }, claim, 'ho-1', 'OrderPlaced', undefined, 'op');
    assert.equal(resent.message.applicationProperties?.[Prop.HandedOffByMessageId], undefined);
    const skip = buildCommand({ kind: 'skip' }, parked, 'ho-1', 'OrderPlaced', undefined, 'op');
    assert.equal(skip.message.applicationProperties?.[Prop.HandedOffByMessageId], undefined);
  });

  test('state rules: what each command accepts', () => {
    assert.equal(refusal({ kind: 'resubmit' }, row()), undefined);
    assert.equal(refusal({ kind: 'skip' }, row({ status: 'DeadLettered' })), undefined);
    assert.match(refusal({ kind: 'resubmit' }, row({ status: 'Completed' })) ?? '', /Completed/);
    assert.match(refusal({ kind: 'skip' }, row({ status: 'Deferred' })) ?? '', /Deferred/);
    assert.match(refusal({ kind: 'resubmit' }, row({ status: 'Pending' })) ?? '', /Pending/);
    const handoff = row({ status: 'Pending', subStatus: 'Handoff', lastMessageId: 'ho-1', parentMessageId: 'req-1' });
    assert.equal(refusal({ kind: 'resubmit' }, handoff), undefined);
    assert.equal(refusal({ kind: 'handoffComplete', messageId: 'ho-1' }, handoff), undefined);
    assert.equal(refusal({ kind: 'handoffComplete', messageId: 'req-1' }, handoff), undefined);
    assert.match(refusal({ kind: 'handoffComplete', messageId: 'other' }, handoff) ?? '', /not the event's pending handoff/);
    assert.match(refusal({ kind: 'handoffFail', messageId: 'err-1', errorText: 'x' }, row()) ?? '', /not a pending handoff/);
  });

  test('specOfClaim: a plain resubmit the Resolver recorded is plain when the history before it says so; an edit stays an edit', () => {
    // Once recorded, a plain claim's row holds the command's payload under the command's own id, as an edited
    // claim's row does: the row alone typed it ResubmitWithChanges (and a receipt written from it said so).
    const claim = (over: Partial<StatusRow>) => row({ status: 'Pending', messageType: MessageType.ResubmissionRequest, lastMessageId: 'mgr-1', parentMessageId: 'err-1', ...over });
    const recordedPlain = claim({ requestMessageId: 'mgr-1', payload: { a: 1 } });
    assert.deepEqual(specOfClaim(recordedPlain, { payload: { a: 1 }, eventTypeId: 'OrderPlaced' }), { kind: 'resubmit' });
    const recordedEdit = claim({ requestMessageId: 'mgr-1', payload: { a: 2 } });
    assert.deepEqual(specOfClaim(recordedEdit, { payload: { a: 1 }, eventTypeId: 'OrderPlaced' }), { kind: 'resubmit', edited: { payload: { a: 2 }, eventTypeId: 'OrderPlaced' } });
    // Never recorded (what Reconcile re-sends): the row is the evidence - a payload under the claim's id is an edit.
    assert.deepEqual(specOfClaim(recordedEdit), { kind: 'resubmit', edited: { payload: { a: 2 }, eventTypeId: 'OrderPlaced' } });
    assert.deepEqual(specOfClaim(claim({ requestMessageId: 'req-1' })), { kind: 'resubmit' });
    assert.deepEqual(specOfClaim(claim({ messageType: MessageType.SkipRequest })), { kind: 'skip' });
    assert.equal(specOfClaim(claim({ messageType: MessageType.HandoffCompletedRequest })), undefined);
  });
});

test("the auditor written with a command's history entry fits the history's limits: a long OIDC subject, an empty name", () => {
  // Before, `user:` + a 255-character subject went in whole, the store refused the receipt (StoreInputError) after
  // the command had gone out: the command sent, the operator answered 400, a bulk job finding no receipt for it.
  const entry = (a: Parameters<typeof auditorFields>[0]) => auditWriteSchema.safeParse({ eventId: 'evt-1', type: 'ResubmissionRequest', ...auditorFields(a) });
  for (const a of [{ name: 'Pat', id: `user:${'x'.repeat(255)}` }, { name: 'n'.repeat(300), id: 'user:1' }, { name: '', id: 'user:2' }, 'm'.repeat(300)]) {
    const parsed = entry(a);
    assert.ok(parsed.success, `${JSON.stringify(a).slice(0, 60)}: ${parsed.success ? '' : parsed.error.message}`);
  }
  assert.deepEqual(auditorFields({ name: '', id: 'user:2' }), { auditor: 'user:2', auditorId: 'user:2' });
  assert.deepEqual(auditorFields({ name: 'Pat', id: 'user:3' }), { auditor: 'Pat', auditorId: 'user:3' });
});
