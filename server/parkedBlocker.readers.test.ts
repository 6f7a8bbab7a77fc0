// The three readers of "which event a parked row waits on" agree, on the embedded Cosmos server: "holds back N" on
// the Endpoint page (heldBack.ts, the rule in code over the rows it reads), the event page's parked list (the
// store's listParkedSiblings, the rule in its query) and the blocker each listed row names (queries.ts). One
// session holds parked rows of every form the rule tells apart; the expected blocker of each is written out here,
// not computed, so the test checks the readers against the rule (lib/store/parkedBlocker.ts), not against itself.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { blockedByReason, MessageType as T } from '@nimbus/sdk/contract';
import { msg, startStoreFixture, uniq, type StoreFixture } from '../lib/store/testing/fixtures.ts';
import { endpointEventsPage } from './heldBack.ts';
import { eventDetails, eventListQuerySchema } from './queries.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const S = 'ORD 7 is blocked by X'; // a session id holding the reason's own words: the split needs the known session
const E = 'E';
const X = 'X';
const reason = (blocker: string, sessionId = S) => blockedByReason(sessionId, blocker);

/** Parked rows: [eventId, blockedBy, errorText, the blocker the rule gives (null: names none)]. */
const PARKED: Array<[string, string | null, string | null, string | null]> = [
  ['p-reason-e', null, reason(E), E],
  ['p-reason-x', null, reason(X), X],
  ['p-field-e', E, null, E],
  ['p-field-x-reason-e', X, reason(E), X],
  ['p-field-e-reason-x', E, reason(X), E],
  ['p-empty-field-reason-e', '', reason(E), E],
  ['p-empty-field-reason-x', '', reason(X), X],
  ['p-empty-field-no-text', '', null, null],
  ['p-no-text', null, null, null],
  ['p-replaying', null, `Session ${S} is replaying parked messages`, null],
  ['p-bare-prefix', null, reason(''), null],
  ['p-other-session', null, reason(E, 'ORD-8'), null],
  ['p-longer-id', null, `${reason(E)} (2)`, `${E} (2)`],
  ['p-other-case', null, reason(E).toUpperCase(), null],
];

let f: StoreFixture;
const ep = uniq('blockerrule');

before(async () => {
  f = await startStoreFixture();
  const writes = [
    msg(T.ErrorResponse, { endpointId: ep, eventId: E, sessionId: S, errorText: 'boom' }),
    msg(T.ErrorResponse, { endpointId: ep, eventId: X, sessionId: S, errorText: 'boom' }),
    ...PARKED.map(([eventId, blockedBy, errorText]) => msg(T.DeferralResponse, { endpointId: ep, eventId, sessionId: S, blockedBy, errorText })),
  ];
  for (const w of writes) assert.equal((await f.store.writeStatus(w)).outcome, 'written', w.eventId);
});

after(async () => {
  await f?.close();
});

test('the event page lists the rows whose blocker is the event or none, each naming the blocker the rule gives', async () => {
  for (const blocker of [E, X]) {
    const view = await eventDetails(f.store, ep, blocker);
    const listed = view.parkedSiblings.map((p) => [p.eventId, p.blockedBy]).sort();
    const expected = PARKED.filter(([, , , b]) => b === blocker || b === null).map(([id, , , b]) => [id, b]).sort();
    assert.deepEqual(listed, expected, `parked behind ${blocker}`);
  }
});

test('"holds back N" counts the rows whose blocker is the event, by the same rule', async () => {
  const page = await endpointEventsPage(f.store, ep, eventListQuerySchema.parse({}));
  const byId = new Map(page.items.map((i) => [i.eventId, i]));
  for (const blocker of [E, X]) {
    const count = PARKED.filter(([, , , b]) => b === blocker).length;
    assert.deepEqual(byId.get(blocker)?.holdsBack, { count, atLeast: false }, `holds back behind ${blocker}`);
  }
});

test('a parked event names the blocker the rule gives', async () => {
  for (const [eventId, , , b] of PARKED) assert.equal((await eventDetails(f.store, ep, eventId)).event.blockedBy, b, eventId);
});
