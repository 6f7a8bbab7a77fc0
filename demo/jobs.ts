// The "external system" of the demo: the ERP's ledger import jobs. A handler hands an invoice off to a job; the
// job finishes later, outside the handler, and reports through the SDK's handoff client (HandoffCompletedRequest
// or HandoffFailedRequest through the Manager topic), as a real integration would.
import type { Logger } from 'pino';
import type { HandoffClient, HandoffCoordinates } from '@nimbus/sdk';
import type { LedgerJobOutcome } from './rules.ts';

export interface LedgerJobTimings {
  /** A normal job finishes within [minMs, maxMs). */
  minMs: number;
  maxMs: number;
  /** A slow job finishes after this long (past its expected-by time, so the console shows it overdue). */
  slowMs: number;
}

/** About ten minutes of retries (1 s doubling to 30 s): longer than any outage the demo or its chaos test makes. */
const REPORT_ATTEMPTS = 25;

export class LedgerJobs {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private stopped = false;
  private readonly wakeOnStop = new Set<() => void>();

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
      const settle = () =>
        outcome === 'fails'
          ? this.client.fail(
              coordinates,
              `Ledger import ${jobId} rejected: accounting period is closed for posting`,
              'LedgerPeriodClosed',
            )
          : this.client.complete(coordinates, { jobId, postedAt: new Date().toISOString() });
      const tracked = this.reportWithRetry(settle, jobId, coordinates).then((reported) => {
        if (reported)
          this.log.info(
            { jobId, eventId: coordinates.eventId, outcome: outcome === 'fails' ? 'failed' : 'completed' },
            'ledger import finished',
          );
      });
      this.inFlight.add(tracked);
      void tracked.finally(() => this.inFlight.delete(tracked));
    }, delay);
    this.timers.set(coordinates.eventId, timer);
  }

  /**
   * A real integration keeps trying to report a finished job: a broker outage must not leave the event a pending
   * handoff forever. Retrying is safe: the handoff client derives the settlement's MessageId, so a send that did
   * get through before the error is recognised as the same command.
   */
  private async reportWithRetry(
    settle: () => Promise<unknown>,
    jobId: string,
    coordinates: HandoffCoordinates,
  ): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        await settle();
        return true;
      } catch (error) {
        if (this.stopped) return false;
        const last = attempt >= REPORT_ATTEMPTS;
        this.log.warn(
          { jobId, eventId: coordinates.eventId, attempt, err: (error as Error).message },
          last
            ? 'reporting a ledger import result failed; giving up'
            : 'reporting a ledger import result failed; retrying',
        );
        if (last) return false;
        await this.pause(Math.min(30_000, 1_000 * 2 ** (attempt - 1)));
        if (this.stopped) return false;
      }
    }
  }

  /** Waits `ms`, or less when the jobs are stopped meanwhile. */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.wakeOnStop.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.wakeOnStop.add(wake);
    });
  }

  get pending(): number {
    return this.timers.size;
  }

  /** Jobs not finished yet are dropped: their events stay pending handoffs (the console shows them overdue). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const wake of [...this.wakeOnStop]) wake();
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
  }
}
