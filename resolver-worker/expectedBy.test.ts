// docs/resolver.md "Validation": a bad value in one property (… a malformed ExpectedBy …) is dropped and named in the
// history entry's ResolverPropertyProblems, and the outcome is still recorded. An ExpectedBy in a year past 9999 (or
// before year 0) - which the SDK sent for any valid Date it was given (markPendingHandoff's expectedBy, decide.ts
// toISOString) - is written by toISOString() in the expanded form (`+010000-…`), which the store's schema refuses:
// the whole PendingHandoffResponse was dead-lettered (InvalidMessage). Now it is dropped and named.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T, Prop } from '@nimbus/sdk/contract';
import { ResolverHarness, eventually, orderBody } from './testHarness.ts';

let h: ResolverHarness;
before(async () => {
  h = await ResolverHarness.start();
  h.resolver();
});
after(() => h.close());

for (const [what, year] of [
  ['past year 9999', 10000],
  ['before year 0', -1],
] as const) {
  test(`a PendingHandoffResponse whose ExpectedBy is ${what} is still recorded (Pending/Handoff), not dead-lettered, with the ExpectedBy named as a problem`, async () => {
    const at = new Date(0);
    at.setUTCFullYear(year, 0, 1);
    const expectedBy = at.toISOString(); // what the SDK put on the wire for such a Date
    assert.match(expectedBy, /^[+-]\d{6}-/);
    const ep = `crm-${randomUUID().slice(0, 8)}`;
    const ev = `e-${randomUUID().slice(0, 8)}`;
    const req = await h.send({ type: T.EventRequest, eventId: ev, to: ep, from: 'shop', body: orderBody({ n: 1 }) });
    await h.settledOk(req.messageId);
    const handoff = await h.send({
      type: T.PendingHandoffResponse,
      eventId: ev,
      from: ep,
      parentMessageId: req.messageId,
      props: { [Prop.HandoffReason]: 'DMF import', [Prop.ExternalJobId]: 'job-7', [Prop.ExpectedBy]: expectedBy },
    });
    const s = await h.settledOk(handoff.messageId);
    const row = await h.store.getStatusRow(ep, ev, 's-1');
    assert.deepEqual(
      { settlement: s.settlement.kind, status: row?.status, subStatus: row?.subStatus, externalJobId: row?.externalJobId, expectedBy: row?.expectedBy },
      { settlement: 'complete', status: 'Pending', subStatus: 'Handoff', externalJobId: 'job-7', expectedBy: null },
      `settled ${JSON.stringify(s.settlement)}`,
    );
    const entry = await eventually(() => h.store.getHistory(ev, handoff.messageId).then((e) => e ?? undefined), 'the history entry');
    assert.equal(entry.properties.ResolverPropertyProblems, 'ExpectedBy is outside the years 0000-9999');
    assert.equal(entry.expectedBy, null);
  });
}
