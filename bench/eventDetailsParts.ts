// Event-details benchmark (`npx tsx bench/eventDetailsParts.ts`): where the Event page's details read
// (server/queries.ts eventDetails) spends its time on the embedded Cosmos server with BENCH_EVENT_DETAILS_EVENTS
// (default 100,000) events seeded (bench/console-seed.ts). Each store read the details make is timed alone, then
// the whole read, for three events: a failed one (the common page an operator opens), one whose session has 150
// events parked behind it, and one with rows in three sessions (its history names them all). Beside the details read,
// in the same process, the store reads of its shape before 2026-12-05 (`beforeShape`: one parked-siblings read per
// session the history names, beside the rows), for the ratio. The parked-siblings part is the read eventDetails
// makes (server/queries.ts parkedSiblings: the blocker filter in the query, up to 101 rows to tell "100" from
// "100+"), called, not copied, so the bench follows it; beside it the session's parked rows read without the blocker
// filter, what the filter costs. Then the details read and the parked reads again with the embedded server's
// narrowing by equality terms on properties other than the partition key turned off (lib/store/embeddedQueries.ts
// fix 4, setPropertyNarrowing), for the ratio of the narrowing in the same run: off, the parked read scans the
// endpoint's rows; on, it runs over the session's parked rows.
// Requests are sequential, one at a time, so the parts add up to what one request costs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { blockedByReason, MessageType as T } from '@nimbus/sdk/contract';
import { setPropertyNarrowing } from '../lib/store/embeddedQueries.ts';
import { createStore, startEmbeddedCosmos, type MessageStore } from '../lib/store/index.ts';
import { msg } from '../lib/store/testing/fixtures.ts';
import { eventDetails, PARKED_LIST_LIMIT, parkedSiblings } from '../server/queries.ts';
import { seedConsoleBench } from './console-seed.ts';
import { type BenchResult, type Percentiles, envInt, latencyRows, percentiles } from './report.ts';

const ENDPOINTS = ['storefrontendpoint', 'billingendpoint', 'shippingendpoint', 'crmendpoint', 'erpendpoint'];
const EP = 'billingendpoint';

/** `rounds` sequential calls of `f`, timed one by one: their p50 and p95 (report.ts percentiles). */
async function timed(rounds: number, f: () => Promise<unknown>): Promise<Percentiles> {
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    await f();
    samples.push(performance.now() - started);
  }
  return percentiles(samples);
}

/** One message of the event recorded as the Resolver records it: history entry and status row. */
async function record(store: MessageStore, type: T, eventId: string, sessionId: string, extra: Record<string, unknown> = {}) {
  const m = msg(type, { endpointId: EP, eventId, sessionId, ...extra });
  await store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
  return m;
}

async function fail(store: MessageStore, eventId: string, sessionId: string) {
  const request = await record(store, T.EventRequest, eventId, sessionId, { payload: { n: 1 } });
  await record(store, T.ErrorResponse, eventId, sessionId, { parentMessageId: request.messageId, errorText: 'boom' });
}

/**
 * The store reads eventDetails made before: a parked-siblings read for every session the history names (today's
 * read, so the ratio is the shape's alone).
 */
async function beforeShape(store: MessageStore, eventId: string): Promise<unknown> {
  const history = store.listHistory(eventId, { pageSize: 200 });
  const parked = history.then((h) =>
    Promise.all([...new Set(h.items.filter((x) => x.endpointId === EP).map((x) => x.sessionId))].map((sessionId) => parkedSiblings(store, EP, sessionId, eventId))),
  );
  return Promise.all([history, store.listAudits(eventId, { pageSize: 200 }), store.listEventRows(EP, eventId), parked]);
}

export async function runEventDetailsBench(): Promise<BenchResult> {
  const events = envInt('BENCH_EVENT_DETAILS_EVENTS', 100_000);
  const rounds = envInt('BENCH_EVENT_DETAILS_ROUNDS', 15);
  // Never the default .nimbus: a directory of its own, removed at the end.
  const dataDir = mkdtempSync(join(tmpdir(), 'nimbus-event-details-'));
  const cosmos = await startEmbeddedCosmos({ port: 0, dataDir: join(dataDir, 'cosmos') });
  const store = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'bench-event-details' });
  try {
    const seeded = await seedConsoleBench(store, { events, endpoints: ENDPOINTS, sessionsPerEndpoint: 2000, spanMinutes: 7 * 24 * 60, failedShare: 0.1 });
    const failed = seeded.samples.find((s) => s.endpointId === EP && s.status === 'Failed')!.eventId;
    await fail(store, 'bench-blocker', 'S-BLOCKED');
    // Parked as the Resolver records them: the blocker named in the park reason only, no blockedBy.
    for (let i = 0; i < 150; i++)
      await record(store, T.DeferralResponse, `bench-parked-${String(i).padStart(3, '0')}`, 'S-BLOCKED', { errorText: blockedByReason('S-BLOCKED', 'bench-blocker') });
    for (const s of ['S-A', 'S-B', 'S-C']) await fail(store, 'bench-three-sessions', s);

    const rows: BenchResult['rows'] = [];
    for (const [label, eventId, session] of [
      ['failed event', failed, undefined],
      ['150 parked behind it', 'bench-blocker', 'S-BLOCKED'],
      ['rows in 3 sessions', 'bench-three-sessions', 'S-C'],
    ] as const) {
      const before = await timed(rounds, () => beforeShape(store, eventId));
      const whole = await timed(rounds, () => eventDetails(store, EP, eventId));
      const sessionId = session ?? (await store.listEventRows(EP, eventId))[0]!.sessionId;
      const parts = {
        history: await timed(rounds, () => store.listHistory(eventId, { pageSize: 200 })),
        audits: await timed(rounds, () => store.listAudits(eventId, { pageSize: 200 })),
        'rows (query over the event partition)': await timed(rounds, () => store.listEventRows(EP, eventId)),
        'parked siblings (one session, as eventDetails reads them)': await timed(rounds, () => parkedSiblings(store, EP, sessionId, eventId)),
        'parked siblings without the blocker filter (one page of 101)': await timed(rounds, () =>
          store.listParkedSiblings({ endpointId: EP, sessionId, pageSize: PARKED_LIST_LIMIT + 1 }),
        ),
      };
      const parkedRead = () => parkedSiblings(store, EP, sessionId, eventId);
      const unfilteredRead = () => store.listParkedSiblings({ endpointId: EP, sessionId, pageSize: PARKED_LIST_LIMIT + 1 });
      setPropertyNarrowing(false);
      const off = {
        details: await timed(rounds, () => eventDetails(store, EP, eventId)),
        parked: await timed(rounds, parkedRead),
        unfiltered: await timed(rounds, unfilteredRead),
      };
      setPropertyNarrowing(true);
      const on = { details: await timed(rounds, () => eventDetails(store, EP, eventId)), parked: await timed(rounds, parkedRead), unfiltered: await timed(rounds, unfilteredRead) };
      rows.push(...latencyRows(`${label}: before, the reads of the old shape`, before, before));
      rows.push(...latencyRows(`${label}: eventDetails`, whole, before));
      for (const [part, v] of Object.entries(parts)) rows.push(...latencyRows(`${label}: ${part} alone`, v, before));
      rows.push(...latencyRows(`${label}: eventDetails, property narrowing off`, off.details, off.details));
      rows.push(...latencyRows(`${label}: eventDetails, property narrowing on (ratio: to off)`, on.details, off.details));
      rows.push(...latencyRows(`${label}: parked siblings as eventDetails reads them, narrowing off`, off.parked, off.parked));
      rows.push(...latencyRows(`${label}: parked siblings as eventDetails reads them, narrowing on (ratio: to off)`, on.parked, off.parked));
      rows.push(...latencyRows(`${label}: parked siblings without the blocker filter, narrowing off`, off.unfiltered, off.unfiltered));
      rows.push(...latencyRows(`${label}: parked siblings without the blocker filter, narrowing on (ratio: to off)`, on.unfiltered, off.unfiltered));
    }
    return {
      title: `Event details read and its parts (${events.toLocaleString('en-US')} events seeded, embedded Cosmos, no traffic)`,
      rows,
      settings: { events, rounds, endpoints: ENDPOINTS.length },
    };
  } finally {
    await store.close();
    await cosmos.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { toMarkdown } = await import('./report.ts');
  console.log(toMarkdown(await runEventDetailsBench()));
  process.exit(0);
}
