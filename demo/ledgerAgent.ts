// The ERP's ledger import agent on the console's Agent API (docs/agents.md): an external system with no Service Bus
// credentials at all. It long-polls the ERP endpoint's pending InvoiceIssued handoffs (non-claiming: the ones it
// holds are excluded from its receives), runs the import - seconds for most, past the expected-by for a slow one,
// a refusal for a closed accounting period - and settles through the API. The AgentClient retries a settlement
// until it lands, so a console restart meanwhile does not leave the event a pending handoff.
import type { Logger } from 'pino';
import { AgentClient, type ConsoleToken, type PendingHandoff } from '@nimbus/sdk';
import { setTimeout as delayFor } from 'node:timers/promises';
import { bucketOf } from './random.ts';
import { DemoEndpoint, DemoEventType, ledgerJobOutcome } from './rules.ts';
import type { LedgerJobTimings } from './jobs.ts';

export interface LedgerAgentOptions {
  consoleUrl: string;
  /** A service principal's token; left out for a console with sign-in off (loopback). */
  token?: ConsoleToken;
  timings: LedgerJobTimings;
  log: Logger;
  /** Imports run at once (default 64: slow ones, held past their expected-by, must not hold up the rest). */
  concurrency?: number;
}

export interface RunningLedgerAgent {
  readonly settled: number;
  stop(): Promise<void>;
}

function invoiceIdOf(h: PendingHandoff): string | undefined {
  const p = h.payload as { invoiceId?: unknown } | null;
  return p && typeof p.invoiceId === 'string' ? p.invoiceId : undefined;
}

export function startLedgerAgent(options: LedgerAgentOptions): RunningLedgerAgent {
  const { log, timings } = options;
  const client = new AgentClient({ consoleUrl: options.consoleUrl, ...(options.token ? { token: options.token } : {}) });
  const abort = new AbortController();
  let settled = 0;
  const loop = client.serve(
    {
      endpointId: DemoEndpoint.erp,
      eventTypeId: DemoEventType.InvoiceIssued,
      concurrency: options.concurrency ?? 64,
      waitSeconds: 20,
      signal: abort.signal,
      onError: (err, at) => log.warn({ stage: at.stage, eventId: at.eventId, err: err instanceof Error ? err.message : String(err) }, 'ledger agent: Agent API call failed; retrying'),
      onSettled: (h, outcome, already) => {
        settled++;
        log.info({ jobId: h.handoff.externalJobId, eventId: h.eventId, outcome, alreadySettled: already }, 'ledger import finished');
      },
    },
    async (h, signal) => {
      const invoiceId = invoiceIdOf(h);
      if (!invoiceId) return { outcome: 'failed', errorText: 'the invoice has no invoiceId', errorType: 'LedgerInputError' };
      const jobId = h.handoff.externalJobId ?? `LEDGER-${invoiceId}`;
      const outcome = ledgerJobOutcome(invoiceId);
      const jitter = bucketOf(`delay:${invoiceId}`, 1000) / 1000;
      const delay = outcome === 'slow' ? timings.slowMs : timings.minMs + Math.floor(jitter * Math.max(0, timings.maxMs - timings.minMs));
      // An abort ends the wait early (checked just below), not with an error.
      await delayFor(delay, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) return null;
      if (outcome === 'fails')
        return { outcome: 'failed', errorText: `Ledger import ${jobId} rejected: accounting period is closed for posting`, errorType: 'LedgerPeriodClosed' };
      return { outcome: 'completed', result: { jobId, postedAt: new Date().toISOString() } };
    },
  );
  log.info({ consoleUrl: options.consoleUrl }, 'ledger agent started on the Agent API');
  return {
    get settled() {
      return settled;
    },
    async stop() {
      abort.abort();
      await loop;
    },
  };
}
