// Bulk-job throughput (issue 15): a resubmit job over BENCH_JOBS_EVENTS failed events (default 1,000) with the rate
// limit off, run by the console's OperationsRunner in this process against the embedded stack (emulator with the
// demo topology, embedded Cosmos; no HTTP, no Next build), once per lot size - commands in flight
// (BENCH_JOBS_CONCURRENCY, default "16,100"; 100 is the console's default, 16 was its default before lots). A lot is
// the Manager's executeMany: the rows read in one Cosmos bulk request, the claims (conditional row writes) in one
// with one counter patch per endpoint and one failure-group patch per group document, the commands sent in Service
// Bus message batches, the receipts in one bulk request. Besides the rate, each level reports the store requests the job cost
// per command (counted on the embedded server: document requests, the runner's job reads and writes and this
// bench's poll of the job, one read per 100 ms, included), and the commands on the wire are counted afterwards:
// every event exactly once.
//   npm run bench jobs
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { MessageType as T } from '@nimbus/sdk/contract';
import { LeaseStore } from '../lib/store/index.ts';
import { msg } from '../lib/store/testing/fixtures.ts';
import { PlatformDocs } from '../server/heartbeat/platformDocs.ts';
import { Manager } from '../server/manager/manager.ts';
import { JobStore } from '../server/operations/jobs.ts';
import { OperationsRunner } from '../server/operations/runner.ts';
import { freezeSelection } from '../server/operations/selection.ts';
import { startConsoleTestStack } from '../server/testing/stack.ts';
import { type BenchResult, envInt } from './report.ts';

const EP = 'billingendpoint';
const SESSIONS = 8;

export async function runJobsBench(): Promise<BenchResult> {
  const events = envInt('BENCH_JOBS_EVENTS', 1000);
  const levels = (process.env.BENCH_JOBS_CONCURRENCY ?? '16,100').split(',').map((s) => Number(s.trim())).filter((n) => n > 0);
  process.env.NIMBUS_LOG_LEVEL ??= 'silent';
  const stack = await startConsoleTestStack('bench-jobs');
  const conn = { endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: stack.env.NIMBUS_COSMOS_DATABASE! };
  const docs = new PlatformDocs(conn);
  const jobs = new JobStore(docs);
  const manager = new Manager({ store: stack.store, client: stack.serviceBus.client });
  const rows: BenchResult['rows'] = [];
  const settings: BenchResult['settings'] = { events, sessions: SESSIONS };
  try {
    for (const concurrency of levels) {
      const prefix = `c${concurrency}`;
      // n Failed events as the Resolver records them (request with a payload, then an error).
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < events) {
            const i = next++;
            const eventId = `${prefix}-${i}`;
            const sessionId = `S-${prefix}-${i % SESSIONS}`;
            const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId, eventTypeId: 'OrderPlaced', payload: { i } });
            const error = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId, parentMessageId: request.messageId, errorType: 'E', errorText: `bench ${prefix} failed` });
            for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
          }
        }),
      );
      const selection = { endpointId: EP, errorText: `bench ${prefix} failed` };
      const frozen = await freezeSelection(stack.store, selection, { all: true });
      if (frozen.length !== events) throw new Error(`froze ${frozen.length} of ${events}`);
      const job = await jobs.create({ kind: 'resubmit', selection, rows: frozen, startedBy: 'bench', ratePerSecond: 0 });
      const requests = countStoreRequests();
      const started = performance.now();
      const runner = new OperationsRunner({ store: stack.store, jobs, leases: new LeaseStore(stack.store.database), manager, scanEveryMs: 200, concurrency }).start();
      let end;
      for (;;) {
        end = (await jobs.get(job.operationId))!;
        if (end.state === 'completed' || end.state === 'failed' || end.state === 'cancelled') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const seconds = (performance.now() - started) / 1000;
      await runner.stop();
      const perCommand = requests.stop() / events;
      // Every command on the wire, once.
      const seen = new Map<string, number>();
      for (let s = 0; s < SESSIONS; s++) {
        const receiver = await stack.serviceBus.client.acceptSession(EP, EP, `S-${prefix}-${s}`, { receiveMode: 'receiveAndDelete' });
        for (;;) {
          const got = await receiver.receiveMessages(500, { maxWaitTimeInMs: 1500 });
          if (got.length === 0) break;
          for (const m of got) {
            const id = String(m.applicationProperties?.EventId ?? '');
            seen.set(id, (seen.get(id) ?? 0) + 1);
          }
        }
        await receiver.close();
      }
      const twice = [...seen.values()].filter((n) => n > 1).length;
      if (end.done !== events || seen.size !== events || twice > 0)
        throw new Error(`job at ${concurrency} in flight: done ${end.done}, refused ${end.refused}, failed ${end.failed}; on the wire ${seen.size}, twice ${twice}`);
      rows.push({
        figure: `resubmit job, ${concurrency} commands in flight, rate limit off`,
        value: events / seconds,
        unit: 'commands/s',
        ...(rows[0] ? { baseline: rows[0].value } : {}),
        better: 'higher',
      });
      rows.push({ figure: `  store requests per command, ${concurrency} in flight`, value: perCommand, unit: 'requests', better: 'lower' });
      settings[`${concurrency} in flight: seconds, on the wire once`] = `${seconds.toFixed(1)}, ${seen.size}`;
    }
    return { title: `Bulk job throughput (${events.toLocaleString('en-US')} failed events, embedded stack, in-process runner)`, rows, settings };
  } finally {
    await manager.close();
    docs.close();
    await stack.close();
  }
}

/**
 * Counts the document requests the embedded Cosmos server (in this process) receives until stop(): the store's
 * round trips, however the client batches them.
 */
function countStoreRequests(): { stop(): number } {
  let n = 0;
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (this: http.Server, event: string, ...args: unknown[]) {
    if (event === 'request' && /\/docs(\/|$)/.test((args[0] as http.IncomingMessage).url ?? '')) n++;
    return emit.apply(this, [event, ...args] as Parameters<typeof emit>);
  } as typeof emit;
  return {
    stop: () => {
      http.Server.prototype.emit = emit;
      return n;
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { toMarkdown } = await import('./report.ts');
  console.log(toMarkdown(await runJobsBench()));
  process.exit(0);
}
