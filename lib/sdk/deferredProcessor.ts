// The deferred processor: a non-session receiver on {E}/DeferredProcessor. Each ProcessDeferredRequest names a
// session; the processor takes that session on {E}/Deferred and replays its parked messages, in DeferralSequence
// order, back to the endpoint topic (To = {E}, a MessageId derived from the parked copy's, ReplaySequence = the parked sequence), completing
// each parked copy after its replay was sent. Only sequences below the trigger's ReplayUntil are replayed: what
// was parked after the trigger waits for the next pass (DESIGN.md §5), so a session that blocks again mid-replay
// does not bounce its parked messages between the two subscriptions.
import type {
  ServiceBusClient,
  ServiceBusReceivedMessage,
  ServiceBusReceiver,
  ServiceBusSender,
  ServiceBusSessionReceiver,
} from '@azure/service-bus';
import type { Logger } from 'pino';
import { pino } from 'pino';
import { MessageType, Subscription } from '../contract/index.ts';
import { withLinkedSignal } from './abortScope.ts';
import { Backoff, sleep } from './backoff.ts';
import type { BackoffOptions } from './backoff.ts';
import { errorSummary } from './dispatcher.ts';
import { fromReceived } from './inbound.ts';
import { buildReplayedCopy } from './outbound.ts';
import { toServiceBusMessage } from './transport.ts';

export interface DeferredProcessorOptions {
  client: ServiceBusClient;
  endpointId: string;
  logger?: Logger;
  /** Parked messages fetched per receive. Default 20. */
  batchSize?: number;
  /** How long to wait for more parked messages before the pass ends. Default 1 s. */
  drainWaitMs?: number;
  /** How long to wait for the next trigger per receive call. Default 5 s. */
  triggerWaitMs?: number;
  backoff?: BackoffOptions;
  /** Called after each trigger (tests, metrics). */
  onPass?: (pass: ReplayPass) => void;
}

export interface ReplayPass {
  sessionId: string | undefined;
  replayed: number;
  outcome: 'replayed' | 'no-session-id' | 'session-locked' | 'failed';
}

export class DeferredProcessor {
  private readonly log: Logger;
  private readonly stopController = new AbortController();
  private receiver: ServiceBusReceiver | undefined;
  private sender: ServiceBusSender | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: DeferredProcessorOptions) {
    this.log = options.logger ?? pino({ level: 'silent' });
  }

  start(): void {
    if (this.loop) throw new Error('the deferred processor is already started');
    const { client, endpointId } = this.options;
    this.receiver = client.createReceiver(endpointId, Subscription.DeferredProcessor);
    this.sender = client.createSender(endpointId);
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopController.abort(new Error('deferred processor stopping'));
    await this.loop?.catch(() => undefined);
    await this.receiver?.close().catch(() => undefined);
    await this.sender?.close().catch(() => undefined);
  }

  private get stopping(): boolean {
    return this.stopController.signal.aborted;
  }

  /** One trigger at a time: the only ordering guarantee the replay needs besides the session's own FIFO. */
  private async run(): Promise<void> {
    const backoff = new Backoff(this.options.backoff);
    while (!this.stopping) {
      let triggers: ServiceBusReceivedMessage[];
      try {
        const receiver = this.receiver!;
        triggers = await withLinkedSignal(this.stopController.signal, (abortSignal) =>
          receiver.receiveMessages(1, { maxWaitTimeInMs: this.options.triggerWaitMs ?? 5000, abortSignal }),
        );
        backoff.reset();
      } catch (error) {
        if (this.stopping) return;
        const delay = backoff.next();
        this.log.warn(
          { err: errorSummary(error), delayMs: delay },
          'receiving replay triggers failed; backing off',
        );
        await sleep(delay, this.stopController.signal);
        continue;
      }
      for (const trigger of triggers) await this.handleTrigger(trigger);
    }
  }

  private async handleTrigger(trigger: ServiceBusReceivedMessage): Promise<void> {
    const inbound = fromReceived(trigger);
    const sessionId =
      trigger.sessionId ||
      (typeof trigger.applicationProperties?.SessionId === 'string'
        ? (trigger.applicationProperties.SessionId as string)
        : undefined);
    const receiver = this.receiver!;
    if (inbound.messageType !== MessageType.ProcessDeferredRequest || !sessionId) {
      const reason = !sessionId
        ? 'No SessionId'
        : `not a ProcessDeferredRequest (${inbound.messageType ?? 'no MessageType'})`;
      await receiver
        .deadLetterMessage(trigger, { deadLetterReason: reason, deadLetterErrorDescription: reason })
        .catch((e) => this.log.warn({ err: errorSummary(e) }, 'dead-lettering a bad trigger failed'));
      this.options.onPass?.({ sessionId, replayed: 0, outcome: 'no-session-id' });
      return;
    }
    const until = inbound.replayUntil ?? Number.POSITIVE_INFINITY;
    let parked: ServiceBusSessionReceiver;
    try {
      parked = await this.options.client.acceptSession(
        this.options.endpointId,
        Subscription.Deferred,
        sessionId,
        { maxAutoLockRenewalDurationInMs: 60_000 },
      );
    } catch (error) {
      if ((error as { code?: string }).code === 'SessionCannotBeLocked') {
        // Another pass holds the session: it replays what is parked.
        await receiver.completeMessage(trigger).catch(() => undefined);
        this.options.onPass?.({ sessionId, replayed: 0, outcome: 'session-locked' });
        return;
      }
      this.log.warn(
        { sessionId, err: errorSummary(error) },
        'could not open the parked session; the trigger will be retried',
      );
      await receiver.abandonMessage(trigger).catch(() => undefined);
      this.options.onPass?.({ sessionId, replayed: 0, outcome: 'failed' });
      return;
    }
    let replayed = 0;
    try {
      replayed = await this.replay(parked, sessionId, until);
      await receiver.completeMessage(trigger);
      this.options.onPass?.({ sessionId, replayed, outcome: 'replayed' });
      this.log.debug({ sessionId, replayed, until }, 'replay pass finished');
    } catch (error) {
      this.log.warn(
        { sessionId, replayed, err: errorSummary(error) },
        'replay pass failed; the trigger will be retried',
      );
      await receiver.abandonMessage(trigger).catch(() => undefined);
      this.options.onPass?.({ sessionId, replayed, outcome: 'failed' });
    } finally {
      await parked.close().catch(() => undefined);
    }
  }

  /** Replays parked messages below `until` in sequence order; returns how many were replayed. */
  private async replay(parked: ServiceBusSessionReceiver, sessionId: string, until: number): Promise<number> {
    let replayed = 0;
    for (;;) {
      // Settlement inside a pass runs to the end; stopping only prevents the next batch.
      if (this.stopping) return replayed;
      const batch = await parked.receiveMessages(this.options.batchSize ?? 20, {
        maxWaitTimeInMs: this.options.drainWaitMs ?? 1000,
      });
      if (batch.length === 0) return replayed;
      const ordered = batch
        .map((message) => ({ message, inbound: fromReceived(message) }))
        .sort((a, b) => (a.inbound.deferralSequence ?? 0) - (b.inbound.deferralSequence ?? 0));
      let reachedBound = false;
      for (const { message, inbound } of ordered) {
        const sequence = inbound.deferralSequence ?? 0;
        if (reachedBound || sequence >= until) {
          // Parked after this pass was asked for: the next pass replays it.
          reachedBound = true;
          await parked.abandonMessage(message);
          continue;
        }
        await this.sender!.sendMessages(
          toServiceBusMessage(
            buildReplayedCopy(
              inbound,
              this.options.endpointId,
              sessionId,
              until === Number.POSITIVE_INFINITY ? sequence + 1 : until,
            ),
          ),
        );
        await parked.completeMessage(message);
        replayed++;
      }
      if (reachedBound) return replayed;
    }
  }
}

export function createDeferredProcessor(options: DeferredProcessorOptions): DeferredProcessor {
  return new DeferredProcessor(options);
}
