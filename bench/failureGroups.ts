// Failure-groups benchmark (issue 15): the read behind GET /api/failure-groups at BENCH_GROUPS_EVENTS events
// (default 100,000; 10% failed over 20 causes, seeded like bench/console.ts) in the embedded Cosmos store, called
// in-process (no HTTP, no Next build: bench/console.ts measures the route over HTTP). Figures, from one run:
//   - the baseline: the read as it was before the aggregates - one query of a projection of every failed row,
//     grouped in memory (a copy kept here, `scanRead`);
//   - the rebuild of every endpoint's aggregates from the rows (what `npm run backfill:fingerprints` does for old
//     rows, and the recount does to repair drift);
//   - the read from the aggregates (server/failures/groups.ts), with the same three filters, and for reference one
//     point read of a small document (what any store request costs on the machine at that moment);
//   - the write path: a failure written through the store (request + error; the aggregate patch included) per
//     second, against a success (request + resolution; no aggregate to move) on the same store.
//   npm run bench failure-groups      (BENCH_GROUPS_EVENTS=1000000 for the 1M figure, if memory allows)
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { MessageType, SELF } from '@nimbus/sdk/contract';
import { CONTAINERS, FAILURE_STATUSES, createStore, startEmbeddedCosmos, type MessageStore } from '../lib/store/index.ts';
import { endpointsWithFailures, rebuildFailureGroups } from '../lib/store/failureGroupAggregates.ts';
import { failureGroups, type FailureGroupsQuery } from '../server/failures/groups.ts';
import { seedConsoleBench } from './console-seed.ts';
import { type BenchResult, envInt, latencyRows, percentiles } from './report.ts';

const ENDPOINTS = ['billingendpoint', 'crmendpoint', 'erpendpoint', 'ledgerendpoint', 'shippingendpoint'];

/** The read before the aggregates (commit 42f3806's server/failures/groups.ts, reduced to counting): the baseline. */
async function scanRead(store: MessageStore, q: FailureGroupsQuery): Promise<number> {
  const where = ['ARRAY_CONTAINS(@statuses, c.status)', 'IS_STRING(c.fingerprint)'];
  const parameters: Array<{ name: string; value: string | string[] }> = [
    { name: '@statuses', value: q.status.length > 0 ? q.status : [...FAILURE_STATUSES] },
  ];
  if (q.endpointId) {
    where.unshift('c.endpointId = @ep');
    parameters.push({ name: '@ep', value: q.endpointId });
  }
  const it = store.database.container(CONTAINERS.events).items.query<{ f: string; e: string; v: string; s: string; u: string }>(
    {
      query: `SELECT c.fingerprint AS f, c.endpointId AS e, c.eventId AS v, c.sessionId AS s, c.eventTypeId AS t, c.updatedAt AS u FROM c WHERE ${where.join(' AND ')}`,
      parameters,
    },
    { maxItemCount: 10_000, ...(q.endpointId ? { partitionKey: [q.endpointId] } : {}) },
  );
  const groups = new Map<string, { n: number; last: { e: string; v: string; s: string; u: string } }>();
  while (it.hasMoreResults())
    for (const r of (await it.fetchNext()).resources ?? []) {
      const g = groups.get(r.f);
      if (!g) groups.set(r.f, { n: 1, last: r });
      else {
        g.n++;
        if (r.u > g.last.u) g.last = r;
      }
    }
  // The old read then point-read each group's newest row for its title and example.
  const top = [...groups.values()].sort((a, b) => b.n - a.n).slice(0, 200);
  await Promise.all(top.map((g) => store.getStatusRow(g.last.e, g.last.v, g.last.s)));
  return top.length;
}

const FILTERS: FailureGroupsQuery[] = [{ status: [] }, { endpointId: 'billingendpoint', status: [] }, { status: ['Failed'] }];

async function time(count: number, warmup: number, fn: (i: number) => Promise<unknown>) {
  const samples: number[] = [];
  for (let i = 0; i < warmup + count; i++) {
    const t = performance.now();
    await fn(i);
    if (i >= warmup) samples.push(performance.now() - t);
  }
  return percentiles(samples);
}

export async function runFailureGroupsBench(): Promise<BenchResult> {
  const events = envInt('BENCH_GROUPS_EVENTS', 100_000);
  const requests = envInt('BENCH_GROUPS_REQUESTS', 100);
  const scanRequests = envInt('BENCH_GROUPS_SCAN_REQUESTS', 30);
  const cosmos = await startEmbeddedCosmos({ port: 0 });
  const store = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'bench-groups' });
  try {
    const seeded = await seedConsoleBench(store, { events, endpoints: ENDPOINTS, sessionsPerEndpoint: 2000, spanMinutes: 7 * 24 * 60, failedShare: 0.1 });
    process.stderr.write(`failure-groups bench: seeded ${seeded.events} events in ${seeded.seconds.toFixed(1)} s\n`);

    const scan = await time(scanRequests, 2, (i) => scanRead(store, FILTERS[i % FILTERS.length]!));

    const rebuildStarted = performance.now();
    let groups = 0;
    let rows = 0;
    for (const ep of await endpointsWithFailures(store.database)) {
      const r = await rebuildFailureGroups(store.database, ep);
      groups += r.groups;
      rows += r.rows;
    }
    const rebuildSeconds = (performance.now() - rebuildStarted) / 1000;

    const read = await time(requests, 5, (i) => failureGroups(store, FILTERS[i % FILTERS.length]!));
    // What any store request costs on this machine now: one point read of an endpoint's counter document.
    const point = await time(requests, 5, (i) => store.getCounts(ENDPOINTS[i % ENDPOINTS.length]!));
    const check = await failureGroups(store, { status: [] });
    if (check.total !== rows) throw new Error(`the aggregates count ${check.total} failed rows, the rows are ${rows}`);

    // The write path: the same store, one event at a time (request, then its answer).
    const writes = envInt('BENCH_GROUPS_WRITES', 300);
    const perSecond = async (answer: 'error' | 'ok') => {
      const started = performance.now();
      for (let i = 0; i < writes; i++) {
        const eventId = `w-${answer}-${randomUUID()}`;
        const base = { endpointId: 'billingendpoint', eventId, sessionId: 's-w', eventTypeId: 'OrderPlaced', enqueuedAt: new Date().toISOString() };
        const request = { ...base, messageId: randomUUID(), messageType: MessageType.EventRequest, parentMessageId: SELF, payload: { i } };
        await store.writeStatus(request);
        await store.writeStatus(
          answer === 'error'
            ? { ...base, messageId: randomUUID(), messageType: MessageType.ErrorResponse, parentMessageId: request.messageId, errorType: 'BenchError', errorText: `bench failure ${i % 7}` }
            : { ...base, messageId: randomUUID(), messageType: MessageType.ResolutionResponse, parentMessageId: request.messageId },
        );
      }
      return writes / ((performance.now() - started) / 1000);
    };
    const okPerSecond = await perSecond('ok');
    const errorPerSecond = await perSecond('error');

    return {
      title: `Failure groups (${events.toLocaleString('en-US')} events, 10% failed, embedded Cosmos, in-process read)`,
      rows: [
        ...latencyRows('baseline: scan of the failed rows (the read before)', scan, scan),
        ...latencyRows('reference: one point read (an endpoint counter document)', point, scan),
        ...latencyRows('read from the aggregates (3 filters)', read, scan, 200),
        { figure: `rebuild of every endpoint's aggregates (${rows.toLocaleString('en-US')} failed rows, ${groups} documents)`, value: rebuildSeconds, unit: 's', better: 'lower' },
        { figure: 'events written with a success (request + resolution)', value: okPerSecond, unit: 'events/s', baseline: okPerSecond, better: 'higher' },
        { figure: 'events written with a failure (request + error; aggregate patch)', value: errorPerSecond, unit: 'events/s', baseline: okPerSecond, better: 'higher' },
      ],
      settings: { events, 'failed rows': rows, 'group documents': groups, requests, 'scan requests': scanRequests, writes, 'rss MB': Math.round(process.memoryUsage().rss / 1e6) },
    };
  } finally {
    await store.close();
    await cosmos.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { toMarkdown } = await import('./report.ts');
  console.log(toMarkdown(await runFailureGroupsBench()));
  process.exit(0);
}
