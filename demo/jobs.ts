// The "external system" of the demo: the ERP's ledger import jobs. A handler hands an invoice off to a job; the
// job finishes later, outside the handler, and reports through the SDK's handoff client (HandoffCompletedRequest
// or HandoffFailedRequest through the Manager topic), as a real integration would.
import type { Logger } from 'pino';
import type { HandoffClient, HandoffCoordinates } from '../lib/sdk/index.ts';
import type { LedgerJobOutcome } from './rules.ts';

export interface LedgerJobTimings {
  /** A normal job finishes within [minMs, maxMs). */
  minMs: number;
  maxMs: number;
  /** A slow job finishes after this long (past its expected-by time, so the console shows it overdue). */
  slowMs: number;
}

export class LedgerJobs {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private stopped = false;

  constructor(
    private readonly client: HandoffClient,
    private readonly timings: LedgerJobTimings,
    private readonly log: Logger,
  ) {}

  /** Starts the job for one pending handoff (once per event: a redelivered handler call does not start a second). */
  start(jobId: string, coordinates: HandoffCoordinates, outcome: LedgerJobOutcome, jitter: number): void {
    if (this.stopped || this.timers.has(coordinates.eventId)) return;
    const { minMs, maxMs, slowMs } = this.timings;
    const delay = outcome === 'slow' ? slowMs : minMs + Math.floor(jitter * Math.max(0, maxMs - minMs));
    const timer = setTimeout(() => {
      this.timers.delete(coordinates.eventId);
      const settle =
        outcome === 'fails'
          ? this.client.fail(
              coordinates,
              `Ledger import ${jobId} rejected: accounting period is closed for posting`,
              'LedgerPeriodClosed',
            )
          : this.client.complete(coordinates, { jobId, postedAt: new Date().toISOString() });
      const tracked = settle.then(
        () =>
          this.log.info(
            { jobId, eventId: coordinates.eventId, outcome: outcome === 'fails' ? 'failed' : 'completed' },
            'ledger import finished',
          ),
        (error: unknown) => {
          if (!this.stopped)
            this.log.warn(
              { jobId, eventId: coordinates.eventId, err: (error as Error).message },
              'reporting a ledger import result failed',
            );
        },
      );
      this.inFlight.add(tracked);
      void tracked.finally(() => this.inFlight.delete(tracked));
    }, delay);
    this.timers.set(coordinates.eventId, timer);
  }

  get pending(): number {
    return this.timers.size;
  }

  /** Jobs not finished yet are dropped: their events stay pending handoffs (the console shows them overdue). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
  }
}
