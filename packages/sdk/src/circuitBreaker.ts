// The endpoint circuit breaker (opt-in): counts retry-disposition and transient handler outcomes; when too many
// happen within a window it opens and the host stops receiving (messages stay untouched on the subscription, so a
// downstream outage does not burn every session's retry budget). After a pause it half-opens: one delivery probes;
// success closes it, failure opens it again. It never changes how a delivery is settled.
import { Backoff } from './backoff.ts';
import { causeChain } from './errors.ts';
import type { CircuitState } from './pipeline.ts';
import type { ErrorClass } from './retryPolicies.ts';

export interface CircuitBreakerOptions {
  /** Failures within `windowMs` that open the circuit. Default 5. */
  failureThreshold?: number;
  windowMs?: number;
  /** How long the circuit stays open before a probe. Default 30 s. */
  openDurationMs?: number;
  /**
   * The first pause after a half-open probe slot is given back without an outcome (no message came), doubling on
   * each further one up to a tenth of `openDurationMs` (at least this). Default 100 ms.
   */
  probePauseMs?: number;
  /**
   * How long a half-open probe may hold its slot. One held longer (a handler hung on a downstream that never answers)
   * counts as a failure and opens the circuit again, which also aborts the probe's `ctx.signal` in the host: without
   * a deadline the slot stayed taken for good and every worker waited on it. Default `openDurationMs`, at least 30 s:
   * a probe that outlasts the open pause stalls the endpoint longer than reopening does, but a short open pause (a
   * test's, a downstream that recovers fast) must not cut short a healthy probe slowed by a loaded machine. Set it
   * above the longest a handler may take, as a probe slower than this is cut short.
   */
  probeTimeoutMs?: number;
  /** Error types that never count (e.g. a throttled error that carries its own Retry-After). */
  exclude?: readonly ErrorClass[];
  now?: () => number;
}

export type BreakerOutcome = 'success' | 'failure' | 'ignored';

/**
 * What acquire() hands a worker: the right to take one delivery (a batch when Closed). Its record and release act on
 * the probe slot only while this permit holds it, so a worker never frees (or ends) another worker's probe.
 */
export interface BreakerPermit {
  /** Whether this permit holds the HalfOpen probe slot (false: taken while Closed). */
  readonly probe: boolean;
  /** Counts a delivery's outcome (as CircuitBreaker.record). A probe's outcome ends the probe. */
  record(outcome: BreakerOutcome, error?: unknown): void;
  /** Gives the probe slot back if this permit still holds it; nothing otherwise. Safe to call more than once. */
  release(): void;
  /**
   * The probe's delivery is in hand: its deadline counts `probeTimeoutMs` from now. Until then it had the receive
   * wait acquire() was given on top (see there). Nothing for a permit that is not the current probe.
   */
  handling(): void;
}

/** The default probe deadline is the open pause, but never shorter than this (see probeTimeoutMs). */
const MIN_DEFAULT_PROBE_TIMEOUT_MS = 30_000;

/** setTimeout's longest delay (2^31 - 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

/** The holder id of permits taken while Closed: never a probe's (those count from 1). */
const NOT_A_PROBE = 0;

export class CircuitBreaker {
  private stateValue: CircuitState = 'Closed';
  private failures: number[] = [];
  private openedAt = 0;
  /** HalfOpen: the id of the permit holding the probe slot (undefined: the slot is free). */
  private probeHolder: number | undefined;
  private probesTaken = 0;
  /**
   * The id of the last probe taken by the permitless tryAcquire (NOT_A_PROBE: none): the only probe the permitless
   * record() and release() may end. Without it they ended whichever probe was held, another worker's permit's too.
   */
  private permitlessProbe = NOT_A_PROBE;
  /** HalfOpen: when the probe holding the slot took it (epoch ms). */
  private probeTakenAt = 0;
  /** How long the current probe may hold its slot from probeTakenAt (probeTimeoutMs, plus its receive wait until handling). */
  private probeAllowanceMs = 0;
  /** Reads the state at the probe's deadline: a lone worker hung in its probe polls nothing itself. */
  private probeDeadline: ReturnType<typeof setTimeout> | undefined;
  /** HalfOpen: no probe before this (epoch ms), after a probe slot was given back without an outcome. */
  private probeAfter = 0;
  private readonly probePause: Backoff;
  private readonly listeners: Array<(from: CircuitState, to: CircuitState) => void> = [];
  private readonly threshold: number;
  private readonly windowMs: number;
  private readonly openMs: number;
  private readonly probeTimeoutMs: number;
  private readonly now: () => number;

  private readonly options: CircuitBreakerOptions;

  constructor(options: CircuitBreakerOptions = {}) {
    this.options = options;
    this.threshold = Math.max(1, options.failureThreshold ?? 5);
    this.windowMs = options.windowMs ?? 60_000;
    this.openMs = options.openDurationMs ?? 30_000;
    this.probeTimeoutMs = Math.max(1, options.probeTimeoutMs ?? Math.max(this.openMs, MIN_DEFAULT_PROBE_TIMEOUT_MS));
    this.now = options.now ?? Date.now;
    const firstPause = Math.max(1, options.probePauseMs ?? 100);
    this.probePause = new Backoff({ initialMs: firstPause, maxMs: Math.max(firstPause, this.openMs / 10) });
  }

  /**
   * Also where time moves the circuit on: Open half-opens after the open pause, and a probe held past
   * `probeTimeoutMs` fails (the circuit opens again). Every caller that acts on the state (acquire, acquireWaitMs, the
   * host's checks) reads it here, so a hung probe is given up by the next worker that polls.
   */
  get state(): CircuitState {
    if (this.stateValue === 'Open' && this.now() - this.openedAt >= this.openMs) this.transition('HalfOpen');
    else if (this.stateValue === 'HalfOpen' && this.probeHolder !== undefined && this.probeOverdue()) {
      // Its late outcome or release is then a stale permit's: ignored (recordFor, giveBack).
      this.endProbe();
      this.open();
    }
    return this.stateValue;
  }

  onStateChange(listener: (from: CircuitState, to: CircuitState) => void): void {
    this.listeners.push(listener);
  }

  /**
   * As acquire(), without a permit. A probe taken here is ended by the permitless record() or release(), which cannot
   * tell one caller from another: two workers on this API can still end each other's probe.
   *
   * @deprecated Use acquire(): its permit records and releases only its own delivery's probe. Kept for callers
   * written before permits; the permitless record() and release() end only a probe taken here.
   */
  tryAcquire(): boolean {
    const permit = this.acquire();
    if (permit?.probe) this.permitlessProbe = this.probeHolder!;
    return permit !== undefined;
  }

  /**
   * Whether a worker may take a delivery now (undefined: not now), as a permit that ends only its own probe: a worker
   * that took its delivery while Closed and finishes it after the circuit half-opened (its record or release) must
   * not free the probe another worker holds. In HalfOpen only one probe at a time is allowed, and none during the
   * pause after a probe slot was given back without an outcome. Release the permit in a `finally`: a probe that ends
   * without it leaves the slot taken and every worker waiting on a probe that is no longer running, until
   * `probeTimeoutMs` counts it as failed.
   *
   * `receiveWaitMs`: how long the probe may wait for a message before it has one to handle. An idle endpoint's probe
   * waits the whole receive (the session idle timeout, 30 s by default, as long as the default deadline) and must
   * not be taken for a hung handler: the deadline is that wait plus `probeTimeoutMs` until the permit's handling()
   * starts `probeTimeoutMs` afresh.
   */
  acquire(receiveWaitMs = 0): BreakerPermit | undefined {
    const s = this.state;
    if (s === 'Closed') return this.permit(NOT_A_PROBE);
    if (s === 'Open' || this.probeHolder !== undefined || this.now() < this.probeAfter) return undefined;
    const id = ++this.probesTaken;
    this.probeHolder = id;
    this.probeTakenAt = this.now();
    this.probeAllowanceMs = this.probeTimeoutMs + Math.max(0, receiveWaitMs);
    this.armProbeDeadline();
    return this.permit(id);
  }

  private armProbeDeadline(): void {
    clearTimeout(this.probeDeadline);
    // With one worker (or all the others stopped) nobody else reads the state while the probe hangs: this read opens
    // the circuit at the deadline, so the host aborts the hung handler. unref: it must not keep a process alive.
    // Capped at setTimeout's limit (a longer delay would fire at once): the read is then early and changes nothing.
    this.probeDeadline = setTimeout(() => void this.state, Math.min(this.probeAllowanceMs, MAX_TIMER_MS));
    this.probeDeadline.unref?.();
  }

  /**
   * Gives back a HalfOpen probe slot taken by tryAcquire without an outcome (e.g. no message came). The next probe
   * waits a pause that doubles with each such release until an outcome: taken again at once, the workers would
   * accept and release sessions in a tight loop while the endpoint has nothing to probe with. Nothing when the probe
   * held is not tryAcquire's (a permit's, from acquire()): a caller without a permit cannot free another's probe.
   *
   * @deprecated Use the permit acquire() returns (`permit.release()`).
   */
  release(): void {
    this.giveBack(this.permitlessProbe);
  }

  /**
   * How long a worker should wait before accepting a session, since acquire() would refuse it until then: what is
   * left of the open pause; in HalfOpen, the pause after a released probe slot, or, while another worker holds the
   * probe, a short wait for its outcome (the first probe pause). 0 when Closed or a probe may be taken now.
   */
  get acquireWaitMs(): number {
    const s = this.state;
    if (s === 'Closed') return 0;
    if (s === 'Open') return this.remainingOpenMs;
    if (this.probeHolder !== undefined) return this.probePause.initial;
    return Math.max(0, this.probeAfter - this.now());
  }

  /** Milliseconds until the circuit may half-open (0 when it is not open). */
  get remainingOpenMs(): number {
    return this.stateValue === 'Open' ? Math.max(0, this.openMs - (this.now() - this.openedAt)) : 0;
  }

  /**
   * Counts a delivery's outcome. In HalfOpen one that says nothing of the endpoint ('ignored', an excluded error)
   * gives the probe slot back, as release() does: a caller that only records would otherwise leave the circuit
   * half-open with the slot taken and no probe running. In HalfOpen, while a probe is held, it ends (and decides)
   * only a probe taken by tryAcquire: the outcome of a delivery taken without a permit says nothing of a probe a
   * permit holds. With no probe held it decides, as before permits: a caller that only records (never tryAcquire)
   * would otherwise never leave HalfOpen.
   *
   * @deprecated Use the permit acquire() returns (`permit.record()`). Closed, both count alike.
   */
  record(outcome: BreakerOutcome, error?: unknown): void {
    this.recordFor(this.probeHolder === undefined ? undefined : this.permitlessProbe, outcome, error);
  }

  /**
   * `holder`: the id of the permit recording (NOT_A_PROBE: one taken while Closed); undefined: a permitless record()
   * with no probe held, whose outcome decides HalfOpen while the slot is free.
   */
  private recordFor(holder: number | undefined, outcome: BreakerOutcome, error?: unknown): void {
    if (outcome === 'ignored' || (outcome === 'failure' && error !== undefined && this.isExcluded(error))) {
      if (this.state === 'HalfOpen') this.giveBack(holder);
      return;
    }
    const state = this.state;
    if (state === 'HalfOpen') {
      // A permit taken while Closed (or a probe that has ended) finishing now says nothing of the probe another worker
      // holds: its outcome neither closes nor reopens the circuit, and the probe stays held.
      if (holder !== this.probeHolder) return;
      this.endProbe();
      this.probeAfter = 0;
      this.probePause.reset();
      if (outcome === 'success') {
        this.failures = [];
        this.transition('Closed');
      } else {
        this.open();
      }
      return;
    }
    if (outcome === 'success' || state === 'Open') return;
    const t = this.now();
    this.failures = this.failures.filter((f) => t - f < this.windowMs);
    this.failures.push(t);
    if (this.failures.length >= this.threshold) this.open();
  }

  private permit(id: number): BreakerPermit {
    return {
      probe: id !== NOT_A_PROBE,
      record: (outcome, error) => this.recordFor(id, outcome, error),
      release: () => this.giveBack(id),
      handling: () => {
        if (id === NOT_A_PROBE || id !== this.probeHolder || this.state !== 'HalfOpen') return;
        this.probeTakenAt = this.now();
        this.probeAllowanceMs = this.probeTimeoutMs;
        this.armProbeDeadline();
      },
    };
  }

  /**
   * Frees the probe slot if `holder` holds it, and pauses the next probe: taken again at once, the workers would
   * accept and release sessions in a tight loop while the endpoint has nothing to probe with.
   */
  private giveBack(holder: number | undefined): void {
    if (this.probeHolder === undefined || holder !== this.probeHolder) return;
    this.endProbe();
    if (this.stateValue === 'HalfOpen') this.probeAfter = this.now() + this.probePause.next();
  }

  private endProbe(): void {
    this.probeHolder = undefined;
    clearTimeout(this.probeDeadline);
    this.probeDeadline = undefined;
  }

  private probeOverdue(): boolean {
    return this.now() - this.probeTakenAt >= this.probeAllowanceMs;
  }

  private open(): void {
    this.openedAt = this.now();
    this.probeAfter = 0;
    this.probePause.reset();
    this.failures = [];
    this.transition('Open');
  }

  private isExcluded(error: unknown): boolean {
    const excluded = this.options.exclude ?? [];
    return causeChain(error).some((e) => excluded.some((t) => e instanceof t));
  }

  private transition(to: CircuitState): void {
    const from = this.stateValue;
    if (from === to) return;
    this.stateValue = to;
    for (const l of this.listeners) {
      try {
        l(from, to);
      } catch {
        // an observer must not break the breaker
      }
    }
  }
}
