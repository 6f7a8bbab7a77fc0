// A reader of Resolver outcomes: its own subscription on the `Resolver` topic (so it takes nothing from the real
// Resolver), read session by session in order, folded into the rows the Resolver records (OutcomeBook). The test
// harness uses it; authors can run it against a real namespace to watch what their endpoint reports.
import type { ServiceBusAdministrationClient, ServiceBusClient, ServiceBusSessionReceiver } from '@azure/service-bus';
import { Topic } from '../contract/properties.ts';
import { boundedClose, DEFAULT_CLOSE_TIMEOUT_MS, type CloseLogger } from '../servicebus/boundedClose.ts';
import { ResolutionStatus } from '../contract/statuses.ts';
import { OutcomeBook, type EventOutcome } from './outcomes.ts';

export interface OutcomeReaderOptions {
  client: ServiceBusClient;
  /** The subscription on the `Resolver` topic to read (see ensureObserverSubscription). */
  subscription: string;
  /** Sessions read at the same time. Default 4. */
  concurrency?: number;
  /**
   * How long the close of a session receiver is waited for (stop() and each session's end). Default 30 s: a close met
   * by a dropped connection never ends by itself (servicebus/boundedClose.ts), and a test's ending would wait for it.
   */
  closeTimeoutMs?: number;
  /** Told when a close is given up. */
  logger?: CloseLogger;
}

export interface OutcomeWait {
  /** Only this endpoint's row (needed when several endpoints consume the event type). */
  endpointId?: string;
  /**
   * Wait until the row has this status (or one of these). Default: any status but plain Pending — settled,
   * failed, deferred, or parked on a handoff.
   */
  status?: ResolutionStatus | readonly ResolutionStatus[];
  /** Default 30 s. */
  timeoutMs?: number;
}

/**
 * Creates (when missing) a subscription on the `Resolver` topic that receives a copy of everything the Resolver
 * receives: session-enabled, as the Resolver's own, so each event's messages stay in order. Needs Manage rights;
 * on a real namespace, provision it once (the admin client or the portal) and pass only its name to the reader.
 */
export async function ensureObserverSubscription(
  admin: ServiceBusAdministrationClient,
  name: string,
  options: { lockDuration?: string; defaultMessageTimeToLive?: string } = {},
): Promise<void> {
  if (await admin.subscriptionExists(Topic.Resolver, name)) return;
  await admin.createSubscription(Topic.Resolver, name, {
    requiresSession: true,
    lockDuration: options.lockDuration ?? 'PT30S',
    // An observer left behind must not keep a namespace's messages forever.
    defaultMessageTimeToLive: options.defaultMessageTimeToLive ?? 'P1D',
    maxDeliveryCount: 10,
  });
}

export class OutcomeReader {
  readonly book = new OutcomeBook();
  private readonly options: OutcomeReaderOptions;
  private readonly stopper = new AbortController();
  private readonly receivers = new Set<ServiceBusSessionReceiver>();
  private workers: Promise<void>[] = [];
  private lastError: unknown;

  constructor(options: OutcomeReaderOptions) {
    this.options = options;
  }

  start(): void {
    if (this.workers.length > 0) return;
    for (let i = 0; i < (this.options.concurrency ?? 4); i++) this.workers.push(this.work());
  }

  /** The row for `ref` (an event id, or a publish's message id) once it satisfies `wait`. */
  async outcome(ref: string, wait: OutcomeWait = {}): Promise<EventOutcome> {
    const wanted = wait.status === undefined ? undefined : new Set<ResolutionStatus>(typeof wait.status === 'string' ? [wait.status] : wait.status);
    const ok = (row: EventOutcome) =>
      wanted ? wanted.has(row.status) : row.status !== ResolutionStatus.Pending || row.subStatus !== undefined;
    const check = (): EventOutcome | undefined => {
      const rows = this.book.find(ref, wait.endpointId);
      if (rows.length > 1)
        throw new Error(
          `event ${ref} has rows on ${rows.map((r) => r.endpointId).join(', ')}: pass { endpointId } to say which`,
        );
      return rows[0] && ok(rows[0]) ? rows[0] : undefined;
    };
    const found = check();
    if (found) return found;
    const timeoutMs = wait.timeoutMs ?? 30_000;
    return new Promise<EventOutcome>((resolve, reject) => {
      const done = (f: () => void) => {
        clearTimeout(timer);
        off();
        f();
      };
      const off = this.book.onChange(() => {
        try {
          const row = check();
          if (row) done(() => resolve(row));
        } catch (err) {
          done(() => reject(err));
        }
      });
      const timer = setTimeout(() => {
        const rows = this.book.find(ref, wait.endpointId);
        const seen = rows.map((r) => `${r.endpointId}: ${r.status}${r.subStatus ? ` (${r.subStatus})` : ''}`).join('; ');
        const why = this.lastError ? `; the reader's last error: ${(this.lastError as Error).message}` : '';
        done(() =>
          reject(
            new Error(
              `no outcome for ${ref} within ${timeoutMs} ms${wanted ? ` with status ${[...wanted].join('/')}` : ''}` +
                ` (seen: ${seen || 'nothing'})${why}`,
            ),
          ),
        );
      }, timeoutMs);
    });
  }

  async stop(): Promise<void> {
    this.stopper.abort();
    await Promise.all([...this.receivers].map((r) => this.closeReceiver(r)));
    await Promise.all(this.workers);
    this.workers = [];
  }

  private async work(): Promise<void> {
    const signal = this.stopper.signal;
    while (!signal.aborted) {
      let receiver: ServiceBusSessionReceiver;
      try {
        receiver = await this.options.client.acceptNextSession(Topic.Resolver, this.options.subscription, {
          receiveMode: 'receiveAndDelete',
          abortSignal: signal,
        });
      } catch (err) {
        if (signal.aborted) return;
        if (!isNoSession(err)) {
          this.lastError = err;
          await pause(500, signal);
        }
        continue;
      }
      this.receivers.add(receiver);
      try {
        // Drain the session while it has messages; an idle session goes back for whoever is next.
        for (;;) {
          if (signal.aborted) break;
          const batch = await receiver.receiveMessages(50, { maxWaitTimeInMs: 500 });
          if (batch.length === 0) break;
          for (const m of batch) this.book.record(m);
        }
      } catch (err) {
        if (!signal.aborted) this.lastError = err;
      } finally {
        this.receivers.delete(receiver);
        await this.closeReceiver(receiver);
      }
    }
  }

  /** Closes a session receiver, waiting at most closeTimeoutMs; never throws (the reader is done with it). */
  private async closeReceiver(receiver: ServiceBusSessionReceiver): Promise<void> {
    await boundedClose('closing an outcome reader session receiver', () => receiver.close(), {
      timeoutMs: this.options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS,
      logger: this.options.logger,
    }).catch(() => undefined);
  }
}

function isNoSession(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === 'SessionCannotBeLocked' || code === 'ServiceTimeout' || code === 'GeneralError' && /timed? ?out/i.test(String((err as Error).message));
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}
