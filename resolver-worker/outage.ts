// The Resolver's store-outage circuit. Why: a transient store failure used to be settled by waiting, abandoning and
// releasing the session, and the broker then counts a delivery for every message of the batch it had handed out
// (up to 50). In a long outage every write fails, so whole batches reached the subscription's MaxDeliveryCount and
// were dead-lettered by the broker although none of them was at fault. A message's failure alone cannot say
// whether the store is down for everyone or this write keeps failing; a probe of the store can. While the probe
// fails too, the store is down: workers take no new session, and a worker holding one keeps it (its lock renewed by
// the client) and retries the message once the store answers, spending no delivery. When the probe passes but the
// write still fails, the failure is the message's own and its budget decides, as before.
import type { Logger } from 'pino';
import { classifyCosmosError, isStoreErrorNamed } from '../lib/store/index.ts';
import { sleep } from '../lib/concurrency/sleep.ts';
import { untilStopped } from './untilStopped.ts';

export interface StoreOutageOptions {
  /** One round trip that needs the store to read and write (the processor's probe record). */
  probe: () => Promise<void>;
  /** How often the store is probed while it is down. */
  probeEveryMs: number;
  /** The processor's stop signal: waits and probes end with it. */
  signal: AbortSignal;
  log: Logger;
}

/** True when `err` says the store cannot be reached or cannot serve (not: it answered, busy or refusing). */
function isOutage(err: unknown): boolean {
  // A 429 is an answer: the store is up and busy, which the throttle budget handles. Store errors are told by their
  // mark and name, not `instanceof`: the error may come from another copy of lib/store (isStoreError).
  const typed = classifyCosmosError(err, 'probe');
  return typed !== undefined && !isStoreErrorNamed(typed, 'StoreThrottledError') && typed.transient;
}

export class StoreOutage {
  readonly #o: StoreOutageOptions;
  #down: { since: string } | undefined;
  /** One probe at a time, shared by every worker that meets a failure at once. */
  #inFlight: Promise<boolean> | undefined;
  /** The one recovery loop, while it runs: a store that flaps must not start a second one beside it. */
  #watch: Promise<void> | undefined;
  #recoveries = 0;

  constructor(options: StoreOutageOptions) {
    this.#o = options;
  }

  /** Since when the store has been down, while it is. */
  get down(): { since: string } | undefined {
    return this.#down ? { ...this.#down } : undefined;
  }

  /** How many times the store came back: a failure from before the last recovery may be a leftover of the outage. */
  get recoveries(): number {
    return this.#recoveries;
  }

  /**
   * After a transient failure: probes the store now. True (and the circuit open) when the store does not answer
   * either, i.e. it is down for everyone; false when it answers (the failing write is on its own).
   */
  async confirmDown(): Promise<boolean> {
    const answers = await this.#probeOnce();
    if (answers) {
      this.#recovered();
      return false;
    }
    if (!this.#down && !this.#o.signal.aborted) {
      this.#down = { since: new Date().toISOString() };
      this.#o.log.error(
        { since: this.#down.since },
        'Resolver: the store does not answer; no session is taken until it does, and messages in hand are held while their lock is renewed (no delivery spent)',
      );
      // A loop that is still sleeping after a brief recovery picks the new outage up: never two at once.
      this.#watch ??= this.#watchForRecovery();
    }
    return true;
  }

  /**
   * Waits while the store is down: 'up' when it answers again, 'timeout' at `until()` (epoch ms, asked again on
   * every poll: a session lock can end earlier than planned), 'stopped' on stop.
   */
  async waitUntilUp(until: () => number): Promise<'up' | 'timeout' | 'stopped'> {
    while (this.#down) {
      const left = until() - Date.now();
      if (left <= 0) return 'timeout';
      // A short poll of a flag set by the one shared probe loop: holders never probe on their own.
      if (!(await sleep(Math.min(50, left), this.#o.signal))) return 'stopped';
    }
    return this.#o.signal.aborted ? 'stopped' : 'up';
  }

  /** Resolves when the probe loop has ended (after stop). */
  async closed(): Promise<void> {
    await this.#watch?.catch(() => undefined);
    await this.#inFlight?.catch(() => undefined);
  }

  async #watchForRecovery(): Promise<void> {
    try {
      while (this.#down && (await sleep(this.#o.probeEveryMs, this.#o.signal))) {
        if (await this.#probeOnce()) this.#recovered();
      }
    } finally {
      // Cleared in the same turn the loop sees the store up: a new outage after this starts a new loop.
      this.#watch = undefined;
    }
  }

  #recovered(): void {
    if (!this.#down) return;
    this.#o.log.info({ downSince: this.#down.since }, 'Resolver: the store answers again; held messages are retried and sessions taken again');
    this.#down = undefined;
    this.#recoveries++;
  }

  /** True when the store answered. A stop while a probe hangs (a store that does not answer at all) ends it at once. */
  #probeOnce(): Promise<boolean> {
    const { signal } = this.#o;
    this.#inFlight ??= (async () => {
      try {
        const probe = this.#o.probe().then(
          () => true,
          (err: unknown) => !isOutage(err),
        );
        return (await untilStopped(probe, signal)) === true;
      } finally {
        this.#inFlight = undefined;
      }
    })();
    return this.#inFlight;
  }
}
