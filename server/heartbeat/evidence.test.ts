// The evidence lookup never takes the heartbeat down with it: a store that fails the query (throttled, timed out)
// gives "unknown" (undefined) and a warning, instead of an exception that would end the sweep for every other
// endpoint and fail the Health page; unknown is not "never answered" (null), which would turn a busy endpoint Off.
// Nor does unknown last for good: two timeouts past the probe's deadline, the sweep decides Off (overdueVerdict).
// And a failing lookup is not asked again on every poll: the reads back off per endpoint (lookupBackoff).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HeartbeatRecord, HeartbeatSettings, MessageStore } from '../../lib/store/index.ts';
import { heartbeatsFromOverview } from '../history/background.ts';
import { evaluateRule, type AlertSources } from '../alerts/conditions.ts';
import type { RuleDoc } from '../alerts/model.ts';
import { aliveSince, EVIDENCE_REUSE_MS, lastHandledAt, lastHandledAtForProbe, overdueVerdict, UNKNOWN_EVIDENCE_TIMEOUTS } from './evidence.ts';
import { HeartbeatService, readEndpointHealth, type EndpointHealth, type HealthOverview } from './scheduler.ts';

/** Only the path lastHandledAt walks; its query fails the way a 429 does. */
const failingStore = {
  database: {
    container: () => ({
      items: {
        query: () => ({
          fetchAll: async () => {
            throw Object.assign(new Error('Request rate is large'), { code: 429 });
          },
        }),
      },
    }),
  },
} as unknown as MessageStore;

test('a failed evidence lookup is unknown and a warning, not an exception and not "never answered"', async () => {
  const warnings: string[] = [];
  assert.equal(await lastHandledAt(failingStore, 'billingendpoint', (m) => warnings.push(m)), undefined);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /billingendpoint.*Request rate is large/);
});

test('an overdue probe with unreadable evidence is undecided up to two timeouts past its deadline, then Off', () => {
  const sent = '2026-01-01T00:00:00.000Z';
  const at = (s: number) => Date.parse(sent) + s * 1000;
  const timeout = 60;
  assert.equal(overdueVerdict(undefined, sent, at(61), timeout), 'undecided');
  assert.equal(overdueVerdict(undefined, sent, at(timeout * (1 + UNKNOWN_EVIDENCE_TIMEOUTS)), timeout), 'undecided');
  assert.equal(overdueVerdict(undefined, sent, at(timeout * (1 + UNKNOWN_EVIDENCE_TIMEOUTS) + 1), timeout), 'offUnknown');
  // Readable evidence decides as before, however late: busy while answering within the timeout, else Off.
  assert.equal(overdueVerdict(new Date(at(1000)).toISOString(), sent, at(1010), timeout), 'busy');
  assert.equal(overdueVerdict(new Date(at(30)).toISOString(), sent, at(100), timeout), 'off');
  assert.equal(overdueVerdict(null, sent, at(61), timeout), 'off');
});

/**
 * A store whose evidence query answers from a script (an ISO time, null, or an Error to throw like a 429), and whose
 * heartbeat records are `records`: only the paths lastHandledAtForProbe and readEndpointHealth walk. Counts lookups.
 */
function scriptedStore(answers: Array<string | null | Error>, records: HeartbeatRecord[] = []) {
  const s = {
    lookups: 0,
    store: {
      listHeartbeats: async () => records,
      database: {
        container: () => ({
          items: {
            query: () => ({
              fetchAll: async () => {
                const a = answers[Math.min(s.lookups++, answers.length - 1)];
                if (a instanceof Error) throw a;
                return { resources: a === null || a === undefined ? [] : [a] };
              },
            }),
          },
        }),
      },
    } as unknown as MessageStore,
  };
  return s;
}

const T = 60; // timeoutSeconds
const T0 = Date.parse('2026-02-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const throttled = () => Object.assign(new Error('Request rate is large'), { code: 429 });
const quiet = () => undefined;

test('unknown evidence is bounded from the last answer seen, not from the send: a busy probe survives one failed lookup', () => {
  // Sent 5 timeouts ago, queued behind a backlog; an answer was seen 10 s ago (busy), now the lookup fails.
  const sent = iso(T0 - 5 * T * 1000);
  const seen = iso(T0 - 10_000);
  assert.equal(overdueVerdict(seen, sent, T0, T), 'busy', 'the earlier sweep found it busy');
  assert.equal(overdueVerdict(undefined, sent, T0, T, seen), 'undecided', 'one failed lookup after busy leaves it Pending');
  // The bound counts from max(deadline, last answer seen): 2 timeouts after that answer, Off.
  assert.equal(overdueVerdict(undefined, sent, Date.parse(seen) + UNKNOWN_EVIDENCE_TIMEOUTS * T * 1000, T, seen), 'undecided');
  assert.equal(overdueVerdict(undefined, sent, Date.parse(seen) + UNKNOWN_EVIDENCE_TIMEOUTS * T * 1000 + 1, T, seen), 'offUnknown');
  // An answer seen before the probe's deadline does not shorten the bound.
  assert.equal(overdueVerdict(undefined, sent, Date.parse(sent) + 3 * T * 1000, T, iso(Date.parse(sent) - 1_000)), 'undecided');
});

test('the sweep holds a probe it found busy when the next lookup fails, though the probe was sent long ago', async () => {
  const sent = iso(T0 - 5 * T * 1000);
  const probe = { endpointId: 'sweepbusyendpoint', probeId: 'p-sweep-busy', status: 'Pending', sentAt: sent } as HeartbeatRecord;
  const writes: unknown[] = [];
  let answers: Array<string | Error> = [iso(T0 - 10_000)];
  let nowMs = T0;
  const store = {
    listHeartbeats: async () => [probe],
    recordHeartbeat: async (r: unknown) => void writes.push(r),
    getServiceHealth: async () => null,
    listOverduePendingHeartbeatEndpoints: async () => [],
    database: {
      container: () => ({
        items: {
          query: () => ({
            fetchAll: async () => {
              const a = answers.shift()!;
              if (a instanceof Error) throw a;
              return { resources: [a] };
            },
          }),
        },
      }),
    },
  } as unknown as MessageStore;
  const log = { info: quiet, warn: quiet, error: quiet };
  const service = new HeartbeatService({
    store,
    client: {} as never,
    catalog: { endpoints: [{ id: 'sweepbusyendpoint' }] } as never,
    docs: {} as never,
    now: () => new Date(nowMs),
    log,
  });
  const settings = { enabled: true, intervalSeconds: 300, timeoutSeconds: T } as HeartbeatSettings;
  assert.equal(await service.sweep(settings), 0, 'busy: left Pending');
  nowMs = T0 + 30_000;
  answers = [throttled()];
  assert.equal(await service.sweep(settings), 0, 'one failed lookup a tick later: still Pending');
  assert.deepEqual(writes, []);
});

test('the reads reuse a cached answer only while it still proves busy: an aged-out busy answer is looked up again', async () => {
  const sent = iso(T0 - 3 * T * 1000); // overdue by more than a timeout
  const first = iso(T0 - 50_000); // busy at T0, aged past the timeout 20 s later
  const newer = iso(T0 + 10_000);
  const s = scriptedStore([first, newer]);
  const probe = { endpointId: 'agedendpoint', probeId: 'p-aged', sentAt: sent };
  assert.equal(await lastHandledAtForProbe(s.store, probe, T0, T, quiet), first);
  assert.equal(await lastHandledAtForProbe(s.store, probe, T0 + 5_000, T, quiet), first, 'still busy: reused');
  assert.equal(s.lookups, 1);
  const later = await lastHandledAtForProbe(s.store, probe, T0 + 20_000, T, quiet);
  assert.equal(later, newer, 'a read inside the reuse window sees the newer answer');
  assert.ok(aliveSince(later!, sent, T0 + 20_000, T), 'so the endpoint reads busy');
  assert.equal(s.lookups, 2);
});

test('an endpoint outside the catalog (reuseAny) reuses any answer for the window once overdue by more than a timeout', async () => {
  const sent = iso(T0 - 3 * T * 1000);
  const s = scriptedStore([iso(T0 - 50_000), iso(T0 + 10_000)]);
  const probe = { endpointId: 'reuseanyendpoint', probeId: 'p-any', sentAt: sent };
  await lastHandledAtForProbe(s.store, probe, T0, T, quiet, { reuseAny: true });
  assert.equal(await lastHandledAtForProbe(s.store, probe, T0 + 20_000, T, quiet, { reuseAny: true }), iso(T0 - 50_000));
  assert.equal(s.lookups, 1);
  await lastHandledAtForProbe(s.store, probe, T0 + EVIDENCE_REUSE_MS + 1, T, quiet, { reuseAny: true });
  assert.equal(s.lookups, 2, 'a window later it is looked up again');
});

test('a failed read lookup returns the unexpired cached answer, not "never answered"', async () => {
  const sent = iso(T0 - T * 1000 - 10_000); // in its first timeout overdue
  const answered = iso(T0 - 90_000); // before the probe left, so not busy: asked afresh on the next read
  const s = scriptedStore([answered, throttled()]);
  const probe = { endpointId: 'failreadendpoint', probeId: 'p-fail', sentAt: sent };
  assert.equal(await lastHandledAtForProbe(s.store, probe, T0, T, quiet), answered);
  assert.equal(await lastHandledAtForProbe(s.store, probe, T0 + 5_000, T, quiet), answered);
  assert.equal(s.lookups, 2);
  assert.equal(await lastHandledAtForProbe(s.store, probe, T0 + EVIDENCE_REUSE_MS + 1, T, quiet), undefined, 'expired: unknown');
});

test('unknown evidence within the bound: the read says so, and the heartbeat missing alert neither fires nor recovers on it', async () => {
  const rec = (sentAtMs: number) => [{ endpointId: 'unknownendpoint', probeId: `p-${sentAtMs}`, status: 'Pending', sentAt: iso(sentAtMs) } as HeartbeatRecord];
  const read = (records: HeartbeatRecord[]) =>
    readEndpointHealth(scriptedStore([throttled()], records).store, 'unknownendpoint', true, { nowMs: T0, timeoutSeconds: T, backlog: async () => 3, warn: quiet });
  const within = (await read(rec(T0 - 2 * T * 1000))).health;
  assert.equal(within.busy, false);
  assert.equal(within.evidenceUnknown, true, 'overdue by one timeout, lookup failed: unknown, as the sweep sees it');
  const beyond = (await read(rec(T0 - 4 * T * 1000))).health;
  assert.equal(beyond.evidenceUnknown, false, 'past the bound the sweep turns it Off: not unknown any more');

  const overview = (endpoints: EndpointHealth[]) =>
    ({ settings: { enabled: true }, resolver: { lastSeenAt: null }, endpoints }) as unknown as HealthOverview;
  const alertView = heartbeatsFromOverview(overview([within, { ...beyond, endpointId: 'silentendpoint' }]));
  assert.deepEqual(
    alertView.endpoints.map((e) => [e.endpointId, e.unknown]),
    [['unknownendpoint', true], ['silentendpoint', false]],
    'the alert sees the unknown endpoint as unknown, not as absent',
  );
  // The rule on the unknown endpoint alone: left out, it read as fine ('ok'), so a firing alert for a dead endpoint
  // recovered on one throttled read and its next firing could fall in the cooldown.
  const rule = { type: 'heartbeatMissing', endpointId: 'unknownendpoint', durationSeconds: 0 } as unknown as RuleDoc;
  const src = { heartbeats: async () => heartbeatsFromOverview(overview([{ ...within, included: true, lastSeenAt: null }])) } as unknown as AlertSources;
  const ev = await evaluateRule(rule, src, new Date(T0), undefined);
  assert.equal(ev.status, 'unavailable', 'unknown is neither missing nor fine');
  const both = { heartbeats: async () => heartbeatsFromOverview(overview([{ ...within, included: true, lastSeenAt: null }, { ...beyond, endpointId: 'silentendpoint', included: true, lastSeenAt: null }])) } as unknown as AlertSources;
  const fired = await evaluateRule({ ...rule, endpointId: null } as RuleDoc, both, new Date(T0), undefined);
  assert.equal(fired.status, 'firing', 'a known silent endpoint still fires');
  assert.match(fired.status === 'firing' ? fired.summary : '', /silentendpoint$/);
});

test('reads back off a failing evidence lookup per endpoint: doubling from the 5 s poll to a 30 s cap, unknown all along', async () => {
  // Every lookup fails (a throttled store), the probe is overdue (deadline 1 s before T0), the pages poll every 5 s.
  const endpointId = 'backoffendpoint';
  const records = [{ endpointId, probeId: 'p-backoff', status: 'Pending', sentAt: iso(T0 - (T + 1) * 1000) } as HeartbeatRecord];
  const s = scriptedStore([throttled()], records);
  const askedAt: number[] = [];
  const unknownAt: boolean[] = [];
  for (let t = 0; t < 120; t += 5) {
    const before = s.lookups;
    const { health } = await readEndpointHealth(s.store, endpointId, true, { nowMs: T0 + t * 1000, timeoutSeconds: T, backlog: async () => null, warn: quiet });
    if (s.lookups > before) askedAt.push(t);
    unknownAt.push(health.evidenceUnknown);
  }
  // Waits of 5, 10, 20, then 30 s (the cap): 6 lookups in the 24 polls of these two minutes, not 24.
  assert.deepEqual(askedAt, [0, 5, 15, 35, 65, 95], 'seconds at which the store was asked');
  assert.ok(unknownAt.every(Boolean), 'every read within the bound reports the evidence unknown, asked or not');
  // The verdict rules are the clock's, not the lookups': past the bound (2 timeouts after the deadline) the read no
  // longer says unknown, although no lookup ran at that poll.
  const past = await readEndpointHealth(s.store, endpointId, true, { nowMs: T0 + 120_000, timeoutSeconds: T, backlog: async () => null, warn: quiet });
  assert.equal(s.lookups, 6, 'still backing off at 120 s');
  assert.equal(past.health.evidenceUnknown, false);
});

test('a successful lookup ends the back-off: the next failure waits one poll again', async () => {
  const endpointId = 'backoffresetendpoint';
  // Never answered (null): not busy, so each read asks afresh unless backing off.
  const s = scriptedStore([throttled(), throttled(), null, throttled()]);
  const probe = { endpointId, probeId: 'p-reset', sentAt: iso(T0 - (T + 1) * 1000) };
  const askedAt: number[] = [];
  for (let t = 0; t <= 35; t += 5) {
    const before = s.lookups;
    await lastHandledAtForProbe(s.store, probe, T0 + t * 1000, T, quiet);
    if (s.lookups > before) askedAt.push(t);
  }
  // Fails at 0 (wait 5) and 5 (wait 10); answers at 15; fails at 20 (wait 5 again, not 20) and 25 (wait 10).
  assert.deepEqual(askedAt, [0, 5, 15, 20, 25, 35]);
});

test('the back-off is per endpoint: one endpoint failing does not hold back another one', async () => {
  const s = scriptedStore([throttled(), null, null]);
  const probe = (endpointId: string) => ({ endpointId, probeId: `p-${endpointId}`, sentAt: iso(T0 - (T + 1) * 1000) });
  assert.equal(await lastHandledAtForProbe(s.store, probe('backoffa'), T0, T, quiet), undefined);
  assert.equal(await lastHandledAtForProbe(s.store, probe('backoffb'), T0 + 1_000, T, quiet), null, 'b is asked');
  assert.equal(await lastHandledAtForProbe(s.store, probe('backoffa'), T0 + 2_000, T, quiet), undefined, 'a waits');
  assert.equal(s.lookups, 2);
});

test('the sweep asks whatever the reads back-off says, and its answer ends the back-off for the reads', async () => {
  const endpointId = 'backoffsweependpoint';
  const probe = { endpointId, probeId: 'p-backoff-sweep', status: 'Pending', sentAt: iso(T0 - (T + 1) * 1000) } as HeartbeatRecord;
  const s = scriptedStore([throttled(), iso(T0), iso(T0)], [probe]);
  const store = Object.assign(s.store, { getServiceHealth: async () => null, listOverduePendingHeartbeatEndpoints: async () => [] });
  const read = (ms: number) => lastHandledAtForProbe(store, { endpointId, probeId: probe.probeId, sentAt: probe.sentAt! }, ms, T, quiet);
  assert.equal(await read(T0), undefined, 'a read fails: backing off for 5 s');
  const service = new HeartbeatService({
    store,
    client: {} as never,
    catalog: { endpoints: [{ id: endpointId }] } as never,
    docs: {} as never,
    now: () => new Date(T0 + 1_000),
    log: { info: quiet, warn: quiet, error: quiet },
  });
  await service.sweep({ enabled: true, intervalSeconds: 300, timeoutSeconds: T } as HeartbeatSettings);
  assert.equal(s.lookups, 2, 'the sweep asked within the back-off');
  // The sweep's answer (busy) is not the reads' cache, but it ended the back-off: the read asks at once.
  assert.equal(await read(T0 + 2_000), iso(T0));
  assert.equal(s.lookups, 3);
});
