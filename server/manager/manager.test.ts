// The Manager's no-double-send rule on the real stack: a send that fails puts the row back as it was and audits the
// failure, and the retry sends (once) and writes the receipt; a repeat after that sends nothing, however many other
// audits the event collects meanwhile. The send is made to fail by removing the Manager topic through the admin
// client, and repaired by provisioning it again. (server/manager/brokerDown.test.ts stops the broker itself.)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Prop, Topic } from '@nimbus/sdk/contract';
import { msg, uniq } from '../../lib/store/testing/fixtures.ts';
import { docId, statusRowId } from '../../lib/store/ids.ts';
import { CONTAINERS } from '../../lib/store/store.ts';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { HttpError } from '../http.ts';
import { seedConsoleData } from '../testing/seed.ts';
import { drainSession, jsonBody } from '../testing/sessionWire.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { CLAIM_GRACE_MS, Manager } from './manager.ts';

let stack: ConsoleTestStack;
let manager: Manager;

before(async () => {
  stack = await startConsoleTestStack();
  await seedConsoleData(stack.store);
  manager = new Manager({ store: stack.store, client: stack.serviceBus.client });
});

after(async () => {
  await manager?.close();
  await stack?.close();
});

/** What reached one session of an endpoint's main subscription, read to an end marker (server/testing/sessionWire.ts). */
const wire = async (endpointId: string, sessionId: string) =>
  (await drainSession(stack.serviceBus.client, endpointId, sessionId)).map((m) => ({ body: jsonBody(m), properties: m.applicationProperties ?? {} }));

/** The MessageTypes of the commands that reached the session (received and deleted). */
const typesOnTheWire = async (endpointId: string, sessionId: string) => (await wire(endpointId, sessionId)).map((m) => m.properties[Prop.MessageType]);

describe('Manager on the real stack', () => {
  test('a failed send is answered 503, the row is put back and the failure audited; the retry sends once; a later repeat sends nothing', async () => {
    const before = await stack.store.getStatusRow('billingendpoint', 'evt-failed-1', 'ORD-200');
    assert.equal(before?.status, 'Failed');
    await stack.serviceBus.admin.deleteTopic(Topic.Manager);
    await assert.rejects(
      manager.execute('billingendpoint', 'evt-failed-1', { kind: 'skip' }, 'tester'),
      (e: unknown) => e instanceof HttpError && e.status === 503 && /put back to Failed/.test(e.detail),
    );
    const restored = await stack.store.getStatusRow('billingendpoint', 'evt-failed-1', 'ORD-200');
    assert.equal(restored?.status, 'Failed', 'the claim is undone');
    assert.equal(restored?.lastMessageId, before?.lastMessageId);
    assert.equal(restored?.errorText, before?.errorText);
    const notSent = (await stack.store.listAudits('evt-failed-1')).items;
    assert.deepEqual(notSent.map((a) => [a.type, a.auditor]), [['CommandNotSent', 'tester']], 'the failure is audited, no receipt');
    assert.equal((JSON.parse(notSent[0]!.data!) as { claim: string }).claim, 'restored');

    await provisionTopology(stack.serviceBus.admin, deriveTopology(stack.catalog), { subscriptionDefaults: { lockDuration: 'PT5S' } });
    const retried = await manager.execute('billingendpoint', 'evt-failed-1', { kind: 'skip' }, 'tester');
    assert.equal(retried.outcome, 'sent');

    // Flood the event's audit trail (as unauthenticated refusals could): the receipt is still found.
    // 26 at a time (20 rounds, not 520 round trips one after another): the count is what matters, not the order.
    for (let i = 0; i < 520; i += 26) {
      await Promise.all(
        Array.from({ length: 26 }, (_, k) =>
          stack.store.recordAudit({ eventId: 'evt-failed-1', endpointId: 'billingendpoint', type: 'Comment', auditor: 'flood', comment: `noise ${i + k}` }),
        ),
      );
    }
    const repeated = await manager.execute('billingendpoint', 'evt-failed-1', { kind: 'skip' }, 'tester');
    assert.equal(repeated.outcome, 'duplicate');
    assert.equal(repeated.messageId, retried.messageId);

    const receipt = await stack.store.getAudit('evt-failed-1', retried.messageId);
    assert.deepEqual([receipt?.type, receipt?.auditor], ['Skip', 'tester']);
    assert.deepEqual(await typesOnTheWire('billingendpoint', 'ORD-200'), [MessageType.SkipRequest]);
  });

  test('a command that cannot be built leaves no claim: the event is not held as "being sent" and the next try sends', async () => {
    // The claim was written before the command was built, outside the send's failure path: a build that threw
    // left the event Pending under a claim nobody would send, answered 409 "being sent right now" until
    // CLAIM_GRACE_MS or Reconcile. A result JSON cannot encode (a BigInt) is such a build failure.
    const before = await stack.store.getStatusRow('erpendpoint', 'evt-handoff-1', 'INV-1');
    assert.equal(before?.subStatus, 'Handoff');
    const spec = { kind: 'handoffComplete' as const, messageId: before!.lastMessageId };
    await assert.rejects(manager.execute('erpendpoint', 'evt-handoff-1', { ...spec, result: { amount: 10n } }, 'tester'), TypeError);
    const after = await stack.store.getStatusRow('erpendpoint', 'evt-handoff-1', 'INV-1');
    assert.deepEqual([after?.status, after?.subStatus, after?.lastMessageId], [before?.status, before?.subStatus, before?.lastMessageId], 'the row is as it was');
    const sent = await manager.execute('erpendpoint', 'evt-handoff-1', { ...spec, result: { amount: 10 } }, 'tester');
    assert.equal(sent.outcome, 'sent');
    assert.deepEqual(await typesOnTheWire('erpendpoint', 'INV-1'), [MessageType.HandoffCompletedRequest]);
  });

  test('two consoles racing on one event: exactly one sends; the other is refused while the send may be under way', async () => {
    const [a, b] = await Promise.allSettled([
      manager.execute('billingendpoint', 'evt-dead-1', { kind: 'resubmit' }, 'one'),
      new Manager({ store: stack.store, client: stack.serviceBus.client }).execute('billingendpoint', 'evt-dead-1', { kind: 'resubmit' }, 'two'),
    ]);
    const outcomes = [a, b].map((r) => (r.status === 'fulfilled' ? r.value.outcome : r.reason instanceof HttpError ? r.reason.status : 'error'));
    assert.equal(outcomes.filter((o) => o === 'sent').length, 1, `outcomes: ${outcomes.join(', ')}`);
    assert.equal((await typesOnTheWire('billingendpoint', 'ORD-300')).length, 1);
  });

  describe('a repeated resubmit is a duplicate only when it asks for what was sent', () => {
    const EP = 'billingendpoint';

    /** A Failed event (request with a payload, then an error) in its own session `S-<eventId>`. */
    async function seedFailed(eventId: string): Promise<void> {
      const sessionId = `S-${eventId}`;
      const request = msg(MessageType.EventRequest, { endpointId: EP, eventId, sessionId, eventTypeId: 'OrderPlaced', payload: { eventId, qty: 1 } });
      const error = msg(MessageType.ErrorResponse, { endpointId: EP, eventId, sessionId, parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
      for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
    }

    /** The commands that reached the event's session `S-<eventId>` (received and deleted). */
    const wireOf = (eventId: string) => wire(EP, `S-${eventId}`);

    /** The bodies of the commands that reached the event's session (received and deleted). */
    const onTheWire = async (eventId: string): Promise<unknown[]> => (await wireOf(eventId)).map((m) => m.body);

    const isConflict = (pattern: RegExp) => (e: unknown) => e instanceof HttpError && e.status === 409 && pattern.test(e.detail);
    const edit = (qty: number) => ({ kind: 'resubmit' as const, edited: { payload: { eventId: 'x', qty } } });

    test('another operator\'s different edit is refused (409), not answered as already sent; nothing is sent again', async () => {
      await seedFailed('evt-edit-race');
      const first = await manager.execute(EP, 'evt-edit-race', edit(2), 'alice');
      assert.equal(first.outcome, 'sent');
      await assert.rejects(manager.execute(EP, 'evt-edit-race', edit(3), 'bob'), isConflict(/already sent \(by alice at .*different payload\); nothing was sent/));
      const bodies = await onTheWire('evt-edit-race');
      assert.equal(bodies.length, 1, 'one command on the wire');
      assert.match(JSON.stringify(bodies[0]), /qty\\?":2/, 'the first edit is the one sent');
    });

    test('the same edit twice (a double click, a script retry) is a duplicate, as is a bulk repeat of a plain resubmit', async () => {
      await seedFailed('evt-edit-twice');
      const first = await manager.execute(EP, 'evt-edit-twice', edit(2), 'alice');
      const again = await manager.execute(EP, 'evt-edit-twice', edit(2), 'bob');
      assert.deepEqual([first.outcome, again.outcome, again.messageId], ['sent', 'duplicate', first.messageId]);
      assert.equal((await onTheWire('evt-edit-twice')).length, 1);

      await seedFailed('evt-plain-twice');
      const plain = await manager.execute(EP, 'evt-plain-twice', { kind: 'resubmit' }, 'alice');
      const [bulk] = await manager.executeMany([{ endpointId: EP, eventId: 'evt-plain-twice', sessionId: 'S-evt-plain-twice' }], { kind: 'resubmit' }, 'bob');
      assert.deepEqual([plain.outcome, bulk?.ok && bulk.value.outcome], ['sent', 'duplicate']);
      assert.equal((await onTheWire('evt-plain-twice')).length, 1);
    });

    test('a plain resubmit after an edited one, and an edit after a plain one, are refused (409)', async () => {
      await seedFailed('evt-edit-then-plain');
      assert.equal((await manager.execute(EP, 'evt-edit-then-plain', edit(2), 'alice')).outcome, 'sent');
      await assert.rejects(manager.execute(EP, 'evt-edit-then-plain', { kind: 'resubmit' }, 'bob'), isConflict(/by alice .*with an edited payload/));
      const [bulk] = await manager.executeMany([{ endpointId: EP, eventId: 'evt-edit-then-plain', sessionId: 'S-evt-edit-then-plain' }], { kind: 'resubmit' }, 'bob');
      assert.ok(bulk && !bulk.ok && isConflict(/with an edited payload/)(bulk.error), 'a bulk resubmit is refused too');
      assert.equal((await onTheWire('evt-edit-then-plain')).length, 1);

      await seedFailed('evt-plain-then-edit');
      assert.equal((await manager.execute(EP, 'evt-plain-then-edit', { kind: 'resubmit' }, 'alice')).outcome, 'sent');
      await assert.rejects(manager.execute(EP, 'evt-plain-then-edit', edit(3), 'bob'), isConflict(/with the stored payload, not this edit/));
      assert.equal((await onTheWire('evt-plain-then-edit')).length, 1);
    });

    /**
     * A resubmit sent, its receipt lost (the process died before writing it), and the command recorded by the
     * Resolver as it passed: the row now holds the command's payload under the command's own id, as an edited
     * claim's row does. Returns the command's MessageId.
     */
    async function sentReceiptLostRecorded(eventId: string, spec: { kind: 'resubmit'; edited?: { payload: unknown } }): Promise<string> {
      const sent = await manager.execute(EP, eventId, spec, 'alice');
      assert.equal(sent.outcome, 'sent');
      await stack.store.database.container(CONTAINERS.audits).item(docId(sent.messageId), eventId).delete();
      assert.equal(await stack.store.getAudit(eventId, sent.messageId), null, 'the receipt is gone');
      const row = (await stack.store.getStatusRow(EP, eventId, `S-${eventId}`))!;
      const payload = spec.edited ? spec.edited.payload : { eventId, qty: 1 };
      const recorded = msg(MessageType.ResubmissionRequest, {
        endpointId: EP,
        eventId,
        sessionId: `S-${eventId}`,
        messageId: sent.messageId,
        parentMessageId: row.parentMessageId,
        from: Topic.Manager,
        payload,
      });
      await stack.store.recordOutcome({ history: { ...recorded, enqueuedAt: new Date().toISOString() } as never, status: recorded });
      const after = (await stack.store.getStatusRow(EP, eventId, `S-${eventId}`))!;
      assert.equal(after.requestMessageId, after.lastMessageId, 'the row now looks like an edited claim');
      return sent.messageId;
    }

    test('a plain resubmit repeated after a plain one whose receipt is lost is no conflict; after an edited one it still is', async () => {
      await seedFailed('evt-plain-lost-receipt');
      const plainId = await sentReceiptLostRecorded('evt-plain-lost-receipt', { kind: 'resubmit' });
      // No receipt, but the command is recorded: already sent (nothing sent again), never "a different, edited
      // payload was sent".
      const again = await manager.execute(EP, 'evt-plain-lost-receipt', { kind: 'resubmit' }, 'bob');
      assert.deepEqual([again.outcome, again.messageId], ['duplicate', plainId]);
      assert.equal(await stack.store.getAudit('evt-plain-lost-receipt', plainId), null, 'a fresh claim\'s receipt is left to its sender');

      await seedFailed('evt-edit-lost-receipt');
      await sentReceiptLostRecorded('evt-edit-lost-receipt', edit(5));
      await assert.rejects(manager.execute(EP, 'evt-edit-lost-receipt', { kind: 'resubmit' }, 'bob'), isConflict(/is already being sent \(claimed at .*with an edited payload\)/));
      await assert.rejects(manager.execute(EP, 'evt-edit-lost-receipt', edit(6), 'bob'), isConflict(/with a different payload/));
      assert.equal((await onTheWire('evt-plain-lost-receipt')).length, 1);
      assert.equal((await onTheWire('evt-edit-lost-receipt')).length, 1);
    });

    /** Makes the claim's row look `ms` older than it is, as a claim left by a console that died a while ago. */
    async function ageRow(eventId: string, ms: number): Promise<void> {
      const item = stack.store.database.container(CONTAINERS.events).item(statusRowId(eventId, `S-${eventId}`), [EP, eventId]);
      const { resource } = await item.read<{ updatedAt: string }>();
      await item.replace({ ...resource!, updatedAt: new Date(Date.parse(resource!.updatedAt) - ms).toISOString() });
    }

    test('a repeat of a claim older than the grace period sends nothing once the Resolver has recorded the command; a claim never recorded is re-sent', async () => {
      // A console sent a plain resubmit and died before writing the receipt; the Resolver recorded the command (it is
      // on the broker); the endpoint has not answered. Long after, the operator clicks Resubmit again.
      await seedFailed('evt-recorded-old');
      const messageId = await sentReceiptLostRecorded('evt-recorded-old', { kind: 'resubmit' });
      await ageRow('evt-recorded-old', 2 * CLAIM_GRACE_MS);
      const again = await manager.execute(EP, 'evt-recorded-old', { kind: 'resubmit' }, 'bob');
      assert.deepEqual([again.outcome, again.messageId], ['duplicate', messageId]);
      const written = await stack.store.getAudit('evt-recorded-old', messageId);
      assert.equal(written?.type, 'Resubmit', 'the missing receipt is written, as a plain resubmit\'s');
      assert.equal((await manager.execute(EP, 'evt-recorded-old', { kind: 'resubmit' }, 'carol')).outcome, 'duplicate');
      assert.equal((await onTheWire('evt-recorded-old')).length, 1, 'one command on the wire');

      // The same with an edited resubmit: an identical edit is a duplicate, a different one is still refused.
      await seedFailed('evt-recorded-old-edit');
      await sentReceiptLostRecorded('evt-recorded-old-edit', edit(7));
      await ageRow('evt-recorded-old-edit', 2 * CLAIM_GRACE_MS);
      await assert.rejects(manager.execute(EP, 'evt-recorded-old-edit', edit(8), 'bob'), isConflict(/is already being sent \(claimed at .*with a different payload\)/));
      assert.equal((await manager.execute(EP, 'evt-recorded-old-edit', edit(7), 'bob')).outcome, 'duplicate');
      assert.equal((await stack.store.getAudit('evt-recorded-old-edit', (await stack.store.getStatusRow(EP, 'evt-recorded-old-edit', 'S-evt-recorded-old-edit'))!.lastMessageId))?.type, 'ResubmitWithChanges');
      assert.equal((await onTheWire('evt-recorded-old-edit')).length, 1, 'one command on the wire');

      // Never recorded (the send may have failed unseen): past the grace period the repeat sends, same MessageId.
      await seedFailed('evt-unrecorded-old');
      const sent = await manager.execute(EP, 'evt-unrecorded-old', { kind: 'resubmit' }, 'alice');
      await stack.store.database.container(CONTAINERS.audits).item(docId(sent.messageId), 'evt-unrecorded-old').delete();
      await ageRow('evt-unrecorded-old', 2 * CLAIM_GRACE_MS);
      const resent = await manager.execute(EP, 'evt-unrecorded-old', { kind: 'resubmit' }, 'bob');
      assert.deepEqual([resent.outcome, resent.messageId], ['sent', sent.messageId]);
      const wire = await onTheWire('evt-unrecorded-old');
      assert.equal(wire.length, 2, 'the first send did reach the broker here: the copy is what the inbox absorbs');
    });

    /** Deletes the receipt of command `messageId` (its console died before writing it). */
    const loseReceipt = (eventId: string, messageId: string) => stack.store.database.container(CONTAINERS.audits).item(docId(messageId), eventId).delete();

    /** Records command `messageId` of the claim on the event's row as the Resolver does when it passes. */
    async function recordAsResolver(eventId: string, type: MessageType, messageId: string, over: { errorText?: string; payload?: unknown } = {}): Promise<void> {
      const row = (await stack.store.getStatusRow(EP, eventId, `S-${eventId}`))!;
      const recorded = msg(type, { endpointId: EP, eventId, sessionId: `S-${eventId}`, messageId, parentMessageId: row.parentMessageId, from: Topic.Manager, ...over });
      await stack.store.recordOutcome({ history: { ...recorded, enqueuedAt: new Date().toISOString() } as never, status: recorded });
    }

    /** A skip sent by alice, its receipt lost, recorded by the Resolver, its claim long past the grace period. Returns its MessageId. */
    async function oldRecordedSkip(eventId: string): Promise<string> {
      const sent = await manager.execute(EP, eventId, { kind: 'skip' }, 'alice');
      await loseReceipt(eventId, sent.messageId);
      await recordAsResolver(eventId, MessageType.SkipRequest, sent.messageId);
      await ageRow(eventId, 2 * CLAIM_GRACE_MS);
      return sent.messageId;
    }

    /** Bob repeats the skip `messageId` of the event's session: a duplicate, the missing receipt written, one command on the wire. */
    async function repeatedSkipSendsNothing(eventId: string, messageId: string): Promise<void> {
      const again = await manager.execute(EP, eventId, { kind: 'skip' }, 'bob');
      assert.deepEqual([again.outcome, again.sessionId, again.messageId], ['duplicate', `S-${eventId}`, messageId]);
      assert.equal((await stack.store.getAudit(eventId, messageId))?.type, 'Skip', 'the missing receipt is written');
      assert.equal((await onTheWire(eventId)).length, 1, 'one command on the wire');
    }

    test('a skip repeated long after a lost receipt sends nothing once the Resolver has recorded it', async () => {
      await seedFailed('evt-skip-recorded-old');
      await repeatedSkipSendsNothing('evt-skip-recorded-old', await oldRecordedSkip('evt-skip-recorded-old'));
    });

    /** `n` history entries of the event in `sessionId`, enqueued an hour ago (so sorted before everything else), none changing a row. */
    async function longHistory(eventId: string, sessionId: string, n: number): Promise<void> {
      const enqueuedAt = new Date(Date.now() - 3_600_000).toISOString();
      for (let i = 0; i < n; i += 25) {
        const some = Array.from({ length: Math.min(25, n - i) }, () => msg(MessageType.ErrorResponse, { endpointId: EP, eventId, sessionId, enqueuedAt, errorText: 'noise' }));
        await Promise.all(some.map((m) => stack.store.recordHistory(m as never)));
      }
      assert.ok((await stack.store.listHistory(eventId, { pageSize: 100 })).continuationToken, 'the history is longer than one page of 100');
    }

    test('on an event with more than 100 history entries, a repeat long after a lost receipt still finds the recorded command: nothing is sent again', async () => {
      // The command was looked for in the history's first 100 entries: past them, a recorded skip was sent a second
      // time once the claim was older than the grace period, and a recorded plain resubmit was refused as an edit.
      await seedFailed('evt-long-skip');
      await longHistory('evt-long-skip', 'S-evt-long-skip', 150);
      await repeatedSkipSendsNothing('evt-long-skip', await oldRecordedSkip('evt-long-skip'));

      await seedFailed('evt-long-plain');
      await longHistory('evt-long-plain', 'S-evt-long-plain', 150);
      const plain = await sentReceiptLostRecorded('evt-long-plain', { kind: 'resubmit' });
      await ageRow('evt-long-plain', 2 * CLAIM_GRACE_MS);
      const repeated = await manager.execute(EP, 'evt-long-plain', { kind: 'resubmit' }, 'bob');
      assert.deepEqual([repeated.outcome, repeated.messageId], ['duplicate', plain]);
      assert.equal((await stack.store.getAudit('evt-long-plain', plain))?.type, 'Resubmit', 'the receipt says what the claim sent: the stored payload');
      assert.equal((await onTheWire('evt-long-plain')).length, 1, 'one command on the wire');
    });

    test('a claim in a session the history names only past its first 100 entries is still found: a repeat is a duplicate, not a new command to another row', async () => {
      // The event's claimed row (session S-evt-two-sessions) and a Failed row in another session, whose 150 entries
      // fill the history's first page: the claim's row was not read, and the repeat claimed the other row instead.
      await seedFailed('evt-two-sessions');
      const skip = await oldRecordedSkip('evt-two-sessions');
      const request = msg(MessageType.EventRequest, { endpointId: EP, eventId: 'evt-two-sessions', sessionId: 'S-other', payload: { qty: 1 } });
      const error = msg(MessageType.ErrorResponse, { endpointId: EP, eventId: 'evt-two-sessions', sessionId: 'S-other', parentMessageId: request.messageId, errorText: 'boom' });
      for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
      await longHistory('evt-two-sessions', 'S-other', 150);
      await repeatedSkipSendsNothing('evt-two-sessions', skip);
      assert.equal((await stack.store.getStatusRow(EP, 'evt-two-sessions', 'S-other'))?.status, 'Failed', 'the other row is not claimed');
    });

    test('a claim on a row whose session the history does not name is still found: a repeat is a duplicate, not a new command to another row', async () => {
      // The rows were found through the sessions the history names, and the query over the event's rows only when
      // none of those fitted: a claimed row the history does not name (here its entries are gone; a session named
      // only past eventHistory's 2,000-entry cap is the same) was missed while another session's Failed row fitted,
      // and the repeat claimed that row and sent a second skip.
      await seedFailed('evt-unnamed-claim');
      const skip = (await manager.execute(EP, 'evt-unnamed-claim', { kind: 'skip' }, 'alice')).messageId;
      const history = stack.store.database.container(CONTAINERS.history);
      const { resources } = await history.items.query<{ id: string }>({ query: 'SELECT c.id FROM c WHERE c.eventId = @e', parameters: [{ name: '@e', value: 'evt-unnamed-claim' }] }, { partitionKey: 'evt-unnamed-claim' }).fetchAll();
      for (const { id } of resources) await history.item(id, 'evt-unnamed-claim').delete();
      const request = msg(MessageType.EventRequest, { endpointId: EP, eventId: 'evt-unnamed-claim', sessionId: 'S-other', payload: { qty: 1 } });
      const error = msg(MessageType.ErrorResponse, { endpointId: EP, eventId: 'evt-unnamed-claim', sessionId: 'S-other', parentMessageId: request.messageId, errorText: 'boom' });
      for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
      const again = await manager.execute(EP, 'evt-unnamed-claim', { kind: 'skip' }, 'bob');
      assert.deepEqual([again.outcome, again.sessionId, again.messageId], ['duplicate', 'S-evt-unnamed-claim', skip]);
      assert.equal((await stack.store.getStatusRow(EP, 'evt-unnamed-claim', 'S-other'))?.status, 'Failed', 'the other row is not claimed');
      assert.equal((await onTheWire('evt-unnamed-claim')).length, 1, 'one command on the wire');
    });

    /** A pending handoff (request, then PendingHandoffResponse) in session `S-<eventId>`; returns the request's id, the delivery that handed off. */
    async function seedHandoff(eventId: string): Promise<string> {
      const sessionId = `S-${eventId}`;
      const request = msg(MessageType.EventRequest, { endpointId: EP, eventId, sessionId, payload: { eventId } });
      const handoff = msg(MessageType.PendingHandoffResponse, { endpointId: EP, eventId, sessionId, parentMessageId: request.messageId, handoffReason: 'ERP import', externalJobId: `job-${eventId}` });
      for (const m of [request, handoff]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
      assert.equal((await stack.store.getStatusRow(EP, eventId, sessionId))?.subStatus, 'Handoff');
      return request.messageId;
    }

    /** The pending handoff's id on the event's row (what a settlement names). */
    const handoffOf = async (eventId: string) => (await stack.store.getStatusRow(EP, eventId, `S-${eventId}`))!.lastMessageId;

    test('a repeated handoff settlement with a different text is refused (409), naming who sent the first and when; the same text is a duplicate', async () => {
      // A repeat was answered 'duplicate' whatever its text: bob's error text or note was dropped without a word.
      await seedHandoff('evt-handoff-fail-twice');
      const failId = await handoffOf('evt-handoff-fail-twice');
      const fail = (errorText: string) => ({ kind: 'handoffFail' as const, messageId: failId, errorText });
      const failed = await manager.execute(EP, 'evt-handoff-fail-twice', fail('alice: ERP rejected the invoice'), 'alice');
      assert.equal(failed.outcome, 'sent');
      await assert.rejects(manager.execute(EP, 'evt-handoff-fail-twice', fail('bob: something else'), 'bob'), isConflict(/^a handoff failure of this event was already sent \(by alice at \d{4}-.*, with a different error text\); nothing was sent - reload the event$/));
      const again = await manager.execute(EP, 'evt-handoff-fail-twice', fail('alice: ERP rejected the invoice'), 'bob');
      assert.deepEqual([again.outcome, again.messageId], ['duplicate', failed.messageId]);
      assert.equal((await onTheWire('evt-handoff-fail-twice')).length, 1, 'one command on the wire');

      await seedHandoff('evt-handoff-note-twice');
      const noteId = await handoffOf('evt-handoff-note-twice');
      const complete = (note?: string) => ({ kind: 'handoffComplete' as const, messageId: noteId, note });
      assert.equal((await manager.execute(EP, 'evt-handoff-note-twice', complete('alice: imported by hand'), 'alice')).outcome, 'sent');
      await assert.rejects(manager.execute(EP, 'evt-handoff-note-twice', complete('bob: no idea'), 'bob'), isConflict(/handoff completion of this event was already sent \(by alice at .*, with a different note\)/));
      // Without a note, nothing bob asks for is dropped: a duplicate (an agent's retry often carries none).
      assert.equal((await manager.execute(EP, 'evt-handoff-note-twice', complete(), 'bob')).outcome, 'duplicate');
      assert.equal((await manager.execute(EP, 'evt-handoff-note-twice', complete('alice: imported by hand'), 'bob')).outcome, 'duplicate');
      assert.equal((await onTheWire('evt-handoff-note-twice')).length, 1, 'one command on the wire');

      await seedHandoff('evt-handoff-no-note');
      const bare = { kind: 'handoffComplete' as const, messageId: await handoffOf('evt-handoff-no-note') };
      assert.equal((await manager.execute(EP, 'evt-handoff-no-note', bare, 'alice')).outcome, 'sent');
      await assert.rejects(manager.execute(EP, 'evt-handoff-no-note', { ...bare, note: 'bob: checked twice' }, 'bob'), isConflict(/already sent \(by alice at .*, without a note\)/));
      assert.equal((await onTheWire('evt-handoff-no-note')).length, 1, 'one command on the wire');
    });

    test('without its receipt, a recorded handoff settlement\'s text comes from its history entry: a different text is refused, the same one is a duplicate whose receipt carries the text sent', async () => {
      await seedHandoff('evt-handoff-fail-text');
      const failId = await handoffOf('evt-handoff-fail-text');
      const fail = (errorText: string) => ({ kind: 'handoffFail' as const, messageId: failId, errorText });
      const failed = await manager.execute(EP, 'evt-handoff-fail-text', fail('alice: ERP rejected the invoice'), 'alice');
      await loseReceipt('evt-handoff-fail-text', failed.messageId);
      await recordAsResolver('evt-handoff-fail-text', MessageType.HandoffFailedRequest, failed.messageId, { errorText: 'alice: ERP rejected the invoice' });
      await ageRow('evt-handoff-fail-text', 2 * CLAIM_GRACE_MS);
      // Who sent a failure is in its receipt only: the message says when it was claimed and recorded.
      await assert.rejects(manager.execute(EP, 'evt-handoff-fail-text', fail('bob: something else'), 'bob'), isConflict(/^a handoff failure of this event was already sent \(claimed at .*, recorded by the Resolver at .*, with a different error text\); nothing was sent/));
      assert.equal(await stack.store.getAudit('evt-handoff-fail-text', failed.messageId), null, 'a refused repeat writes no receipt');
      const again = await manager.execute(EP, 'evt-handoff-fail-text', { ...fail('alice: ERP rejected the invoice'), errorType: 'Other' }, 'bob');
      assert.deepEqual([again.outcome, again.messageId], ['duplicate', failed.messageId]);
      const failReceipt = await stack.store.getAudit('evt-handoff-fail-text', failed.messageId);
      assert.deepEqual([failReceipt?.type, failReceipt?.comment], ['FailHandoff', 'alice: ERP rejected the invoice']);
      assert.deepEqual(JSON.parse(failReceipt!.data!), { messageId: failed.messageId, sessionId: 'S-evt-handoff-fail-text', answers: failId, reconstructed: true, errorText: 'alice: ERP rejected the invoice' });

      await seedHandoff('evt-handoff-note-text');
      const noteId = await handoffOf('evt-handoff-note-text');
      const completed = await manager.execute(EP, 'evt-handoff-note-text', { kind: 'handoffComplete', messageId: noteId, note: 'alice: imported by hand' }, 'alice');
      await loseReceipt('evt-handoff-note-text', completed.messageId);
      // The Manager wraps a note as the event's content; the Resolver records that content as the entry's payload.
      await recordAsResolver('evt-handoff-note-text', MessageType.HandoffCompletedRequest, completed.messageId, { payload: { note: 'alice: imported by hand', completedBy: 'alice' } });
      await ageRow('evt-handoff-note-text', 2 * CLAIM_GRACE_MS);
      await assert.rejects(manager.execute(EP, 'evt-handoff-note-text', { kind: 'handoffComplete', messageId: noteId, note: 'bob: no idea' }, 'bob'), isConflict(/already sent \(claimed at .*, recorded by the Resolver at .*, completed by alice, with a different note\)/));
      assert.equal((await manager.execute(EP, 'evt-handoff-note-text', { kind: 'handoffComplete', messageId: noteId, note: 'alice: imported by hand' }, 'bob')).outcome, 'duplicate');
      const noteReceipt = await stack.store.getAudit('evt-handoff-note-text', completed.messageId);
      assert.deepEqual([noteReceipt?.type, noteReceipt?.comment, (JSON.parse(noteReceipt!.data!) as { note?: string }).note], ['CompleteHandoff', 'alice: imported by hand', 'alice: imported by hand']);
      assert.equal((await onTheWire('evt-handoff-fail-text')).length, 1, 'one command on the wire');
      assert.equal((await onTheWire('evt-handoff-note-text')).length, 1, 'one command on the wire');
    });

    test('a recorded completion that sent a result (no note on the wire), its receipt lost: the text is unknown, a repeat stays a duplicate', async () => {
      await seedHandoff('evt-handoff-result');
      const id = await handoffOf('evt-handoff-result');
      const completed = await manager.execute(EP, 'evt-handoff-result', { kind: 'handoffComplete', messageId: id, result: { invoice: 'INV-9' } }, 'alice');
      await loseReceipt('evt-handoff-result', completed.messageId);
      await recordAsResolver('evt-handoff-result', MessageType.HandoffCompletedRequest, completed.messageId, { payload: { invoice: 'INV-9' } });
      const again = await manager.execute(EP, 'evt-handoff-result', { kind: 'handoffComplete', messageId: id, note: 'bob: checked' }, 'bob');
      assert.deepEqual([again.outcome, again.messageId], ['duplicate', completed.messageId]);
      assert.equal((await onTheWire('evt-handoff-result')).length, 1, 'one command on the wire');
    });

    /** Alice settles the handoff naming `answered`; her receipt is lost, the claim ages, bob repeats: both copies' HandedOffByMessageId. */
    async function resentHandedOffBy(eventId: string, answered: string): Promise<unknown[]> {
      const spec = { kind: 'handoffComplete' as const, messageId: answered, note: 'done' };
      const first = await manager.execute(EP, eventId, spec, 'alice');
      await loseReceipt(eventId, first.messageId);
      await ageRow(eventId, 2 * CLAIM_GRACE_MS);
      const resent = await manager.execute(EP, eventId, spec, 'bob');
      assert.deepEqual([resent.outcome, resent.messageId], ['sent', first.messageId], 'never recorded: sent again, same MessageId');
      return (await wireOf(eventId)).map((m) => m.properties[Prop.HandedOffByMessageId]);
    }

    test('a handoff settlement re-sent by a repeat names the same delivery as the first send (HandedOffByMessageId)', async () => {
      // The first send named the delivery from the handoff row; the re-send was built from the claim row, which no
      // longer names it, and went out without HandedOffByMessageId (the subscriber then matches by EventId alone).
      const delivery = await seedHandoff('evt-handoff-resend');
      const handoffRow = (await stack.store.getStatusRow(EP, 'evt-handoff-resend', 'S-evt-handoff-resend'))!;
      assert.deepEqual(await resentHandedOffBy('evt-handoff-resend', handoffRow.lastMessageId), [delivery, delivery], 'both copies name the delivery that handed off');

      // A handoff row put back after a refused command, under the refusal notice's id (as the Resolver does it): the
      // claim answers the notice, whose history entry is no handoff; the session's latest handoff names the delivery.
      const restoredDelivery = await seedHandoff('evt-handoff-restored');
      const before = (await stack.store.getStatusRow(EP, 'evt-handoff-restored', 'S-evt-handoff-restored'))!;
      const notice = msg(MessageType.ErrorResponse, { endpointId: EP, eventId: 'evt-handoff-restored', sessionId: 'S-evt-handoff-restored', parentMessageId: 'refused-command', deadLetterReason: 'CommandRefused' });
      await stack.store.recordHistory({ ...notice, enqueuedAt: new Date().toISOString() } as never);
      const putBack = await stack.store.writeStatus(
        { endpointId: EP, eventId: 'evt-handoff-restored', sessionId: 'S-evt-handoff-restored', messageId: notice.messageId, messageType: MessageType.PendingHandoffResponse, eventTypeId: before.eventTypeId, parentMessageId: restoredDelivery, enqueuedAt: new Date().toISOString(), handoffReason: before.handoffReason, externalJobId: before.externalJobId },
        { lastMessageId: before.lastMessageId, status: before.status },
      );
      assert.equal(putBack.outcome, 'written');
      assert.deepEqual(await resentHandedOffBy('evt-handoff-restored', notice.messageId), [restoredDelivery, restoredDelivery], 'both copies name the delivery, after a refusal too');
    });

    type ChainEntry = 'older' | 'resubmit' | 'newer';
    /**
     * A session's handoff chain made by hand, a minute ago: the request, the older handoff, the resubmission answering
     * it and the newer handoff answering that, both handoffs stamped the same millisecond (2 s in). `ids` names the
     * chain's entries (fresh ids when absent); `resubmitAt` is the resubmission's enqueuedAt in ms after the start.
     * The entries in `recordedAt` have their recordedAt rewritten to that many ms after the start, each written and
     * rewritten in the order given, after the rest are written with the store's own; the order decides which document
     * the database keeps last among a tie. Then the newer handoff's row is put back under a refusal notice's id, as the
     * Resolver does after a refused command.
     */
    async function seedHandoffChain(eventId: string, chain: { ids?: Record<ChainEntry, string>; resubmitAt: number; recordedAt: Array<[ChainEntry, number]> }) {
      const sessionId = `S-${eventId}`;
      const base = Date.now() - 60_000;
      const iso = (ms: number) => new Date(base + ms).toISOString();
      const tie = iso(2000);
      const id = (entry: ChainEntry) => (chain.ids ? { messageId: chain.ids[entry] } : {});
      const request = msg(MessageType.EventRequest, { endpointId: EP, eventId, sessionId, payload: { eventId }, enqueuedAt: iso(0) });
      const older = msg(MessageType.PendingHandoffResponse, { endpointId: EP, eventId, sessionId, ...id('older'), parentMessageId: request.messageId, handoffReason: 'ERP import', externalJobId: 'job-1', enqueuedAt: tie });
      const resubmit = msg(MessageType.ResubmissionRequest, { endpointId: EP, eventId, sessionId, ...id('resubmit'), parentMessageId: older.messageId, payload: { eventId }, enqueuedAt: iso(chain.resubmitAt) });
      const newer = msg(MessageType.PendingHandoffResponse, { endpointId: EP, eventId, sessionId, ...id('newer'), parentMessageId: resubmit.messageId, handoffReason: 'ERP import', externalJobId: 'job-2', enqueuedAt: tie });
      const entries = { older, resubmit, newer };
      const rewritten = new Set(chain.recordedAt.map(([entry]) => entry));
      const plain = (['older', 'resubmit', 'newer'] as const).filter((e) => !rewritten.has(e)).map((e) => entries[e]);
      for (const m of [request, ...plain]) await stack.store.recordHistory(m as never);
      const history = stack.store.database.container(CONTAINERS.history);
      for (const [entry, recordedAt] of chain.recordedAt) {
        const m = entries[entry];
        await stack.store.recordHistory(m as never);
        const item = history.item(docId(m.messageId), eventId);
        const { resource } = await item.read<Record<string, unknown>>();
        await item.replace({ ...resource!, recordedAt: iso(recordedAt) });
      }
      const notice = msg(MessageType.ErrorResponse, { endpointId: EP, eventId, sessionId, parentMessageId: 'refused-command', deadLetterReason: 'CommandRefused', enqueuedAt: iso(4000) });
      await stack.store.recordHistory(notice as never);
      const putBack = await stack.store.writeStatus({ ...newer, messageId: notice.messageId, enqueuedAt: notice.enqueuedAt });
      assert.equal(putBack.outcome, 'written');
      return { ...entries, notice };
    }

    test('after a refusal, of two handoffs stamped the same millisecond the re-send names the one recorded last, however the store lists them (HandedOffByMessageId)', async () => {
      // The session's latest handoff was the last of the store's list, ordered by enqueuedAt alone: of two handoffs
      // of one millisecond the database kept the older last, and the re-send named the delivery of the earlier
      // handoff, which the subscriber refuses. The history's order (server/historyOrder.ts) puts the newer one last.
      const eventId = 'evt-handoff-tie';
      // recordedAt says which handoff is newer; each entry is rewritten, the newer first, so the older one is the
      // document the database keeps last among the tie (asserted below: the case this test is about).
      const { older, resubmit, newer, notice } = await seedHandoffChain(eventId, { resubmitAt: 1000, recordedAt: [['newer', 3000], ['older', 2500]] });
      const listed = (await stack.store.listHistory(eventId)).items.filter((h) => h.messageType === MessageType.PendingHandoffResponse).map((h) => h.messageId);
      assert.deepEqual(listed, [newer.messageId, older.messageId], 'the store lists the older handoff last');
      assert.deepEqual(await resentHandedOffBy(eventId, notice.messageId), [resubmit.messageId, resubmit.messageId], 'both copies name the delivery of the newer handoff');
    });

    test('after a refusal, of two handoffs recorded in one batch (one millisecond, one recordedAt) the re-send names the newer by their parent links, whatever their ids', async () => {
      // One receive's entries share a recordedAt, so only the chain older handoff → resubmission → newer handoff
      // orders them. The ids are chosen so that id order puts the older handoff last: picking the handoffs out before
      // ordering lost the resubmission between them and named the older one's delivery.
      const eventId = 'evt-handoff-batch-tie';
      const { resubmit, notice } = await seedHandoffChain(eventId, {
        ids: { older: uniq('z-older'), resubmit: uniq('m-resubmit'), newer: uniq('a-newer') },
        resubmitAt: 2000,
        recordedAt: [['older', 3000], ['resubmit', 3000], ['newer', 3000]],
      });
      assert.deepEqual(await resentHandedOffBy(eventId, notice.messageId), [resubmit.messageId, resubmit.messageId], 'both copies name the delivery of the newer handoff');
    });

    test('a handoff settled and answered (Completed, Failed) is refused 409 at once, by either settlement: nothing is sent', async () => {
      // The SDK would refuse such a command too, but only later, as a CommandRefused notice in the history.
      for (const [eventId, kind, answer, status] of [
        ['evt-handoff-completed', 'handoffComplete', MessageType.ResolutionResponse, 'Completed'],
        ['evt-handoff-failed', 'handoffFail', MessageType.ErrorResponse, 'Failed'],
      ] as const) {
        await seedHandoff(eventId);
        const handoffRow = (await stack.store.getStatusRow(EP, eventId, `S-${eventId}`))!;
        const settle = (k: 'handoffComplete' | 'handoffFail') =>
          k === 'handoffComplete' ? { kind: k, messageId: handoffRow.lastMessageId, note: 'done' } : { kind: k, messageId: handoffRow.lastMessageId, errorText: 'gave up' };
        const first = await manager.execute(EP, eventId, settle(kind), 'alice');
        assert.equal(first.outcome, 'sent');
        // The Resolver records the command, then the endpoint's answer to it.
        await recordAsResolver(eventId, kind === 'handoffComplete' ? MessageType.HandoffCompletedRequest : MessageType.HandoffFailedRequest, first.messageId);
        const answered = msg(answer, { endpointId: EP, eventId, sessionId: `S-${eventId}`, parentMessageId: first.messageId, ...(answer === MessageType.ErrorResponse ? { errorType: 'E', errorText: 'gave up' } : {}) });
        await stack.store.recordOutcome({ history: { ...answered, enqueuedAt: new Date().toISOString() } as never, status: answered });
        assert.equal((await stack.store.getStatusRow(EP, eventId, `S-${eventId}`))?.status, status);
        for (const k of ['handoffComplete', 'handoffFail'] as const) {
          await assert.rejects(manager.execute(EP, eventId, settle(k), 'bob'), isConflict(new RegExp(`^the event is ${status}, not a pending handoff$`)), `${k} on a ${status} event`);
        }
        assert.equal((await onTheWire(eventId)).length, 1, 'only the first settlement is on the wire');
      }
    });
  });
});
