import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker } from './circuitBreaker.ts';

class Throttled extends Error {}

describe('circuit breaker', () => {
  function breaker(openDurationMs = 500, probeTimeoutMs?: number) {
    let t = 0;
    const transitions: string[] = [];
    const b = new CircuitBreaker({
      failureThreshold: 3,
      windowMs: 1000,
      openDurationMs,
      probeTimeoutMs,
      exclude: [Throttled],
      now: () => t,
    });
    b.onStateChange((from, to) => transitions.push(`${from}->${to}`));
    return { b, transitions, advance: (ms: number) => (t += ms) };
  }

  test('opens after the threshold within the window; failures outside the window do not count', () => {
    const { b, transitions, advance } = breaker();
    b.record('failure');
    advance(1200);
    b.record('failure');
    b.record('failure');
    assert.equal(b.state, 'Closed');
    b.record('failure');
    assert.equal(b.state, 'Open');
    assert.equal(b.tryAcquire(), false);
    assert.deepEqual(transitions, ['Closed->Open']);
  });

  test('excluded error types and successes do not count', () => {
    const { b } = breaker();
    for (let i = 0; i < 5; i++) b.record('failure', new Error('wrapped', { cause: new Throttled() }));
    b.record('success');
    assert.equal(b.state, 'Closed');
  });

  test('half-opens after the pause with a single probe; success closes, failure reopens', () => {
    const { b, transitions, advance } = breaker();
    for (let i = 0; i < 3; i++) b.record('failure');
    advance(499);
    assert.equal(b.state, 'Open');
    advance(1);
    assert.equal(b.state, 'HalfOpen');
    assert.equal(b.tryAcquire(), true);
    assert.equal(b.tryAcquire(), false, 'one probe at a time');
    b.record('failure');
    assert.equal(b.state, 'Open');
    advance(500);
    assert.equal(b.tryAcquire(), true);
    b.record('success');
    assert.equal(b.state, 'Closed');
    assert.deepEqual(transitions, [
      'Closed->Open',
      'Open->HalfOpen',
      'HalfOpen->Open',
      'Open->HalfOpen',
      'HalfOpen->Closed',
    ]);
  });
  test('half-open: a probe slot given back without an outcome pauses the next probe, doubling, until an outcome', () => {
    const { b, advance } = breaker(5_000);
    for (let i = 0; i < 3; i++) b.record('failure');
    advance(5_000);
    assert.equal(b.tryAcquire(), true, 'the probe');
    assert.ok(b.acquireWaitMs > 0, 'other workers wait for the probe instead of accepting sessions');
    b.release(); // the probe found no message
    assert.equal(b.tryAcquire(), false, 'taken again at once, the workers accept and release sessions in a loop');
    assert.equal(b.acquireWaitMs, 100);
    advance(99);
    assert.equal(b.tryAcquire(), false);
    advance(1);
    assert.equal(b.acquireWaitMs, 0);
    assert.equal(b.tryAcquire(), true);
    b.release();
    assert.equal(b.acquireWaitMs, 200, 'the pause doubles while probes find nothing');
    advance(200);
    b.release(); // no probe held: giving back nothing pauses nothing
    assert.equal(b.acquireWaitMs, 0);
    assert.equal(b.tryAcquire(), true);
    b.record('failure');
    assert.equal(b.state, 'Open');
    assert.equal(b.acquireWaitMs, 5_000, 'open: the rest of the open pause');
    advance(5_000);
    assert.equal(b.tryAcquire(), true, 'an outcome resets the probe pause');
    b.release();
    assert.equal(b.acquireWaitMs, 100);
    advance(100);
    assert.equal(b.tryAcquire(), true);
    b.record('success');
    assert.equal(b.state, 'Closed');
    assert.equal(b.acquireWaitMs, 0);
    b.release();
    assert.equal(b.tryAcquire(), true, 'closed: never paused');
  });

  test('the probe pause is capped at a tenth of the open duration, and at least the first pause', () => {
    const { b, advance } = breaker(3_000);
    for (let i = 0; i < 3; i++) b.record('failure');
    advance(3_000);
    const pauses: number[] = [];
    for (let i = 0; i < 4; i++) {
      assert.equal(b.tryAcquire(), true);
      b.release();
      pauses.push(b.acquireWaitMs);
      advance(b.acquireWaitMs);
    }
    assert.deepEqual(pauses, [100, 200, 300, 300]);
    const short = breaker(500);
    for (let i = 0; i < 3; i++) short.b.record('failure');
    short.advance(500);
    assert.equal(short.b.tryAcquire(), true);
    short.b.release();
    assert.equal(short.b.acquireWaitMs, 100, 'a tenth of 500 ms is below the first pause: the first pause holds');
  });
  test('half-open: a probe whose outcome says nothing (ignored, an excluded error) gives its slot back when recorded', () => {
    const { b, advance } = breaker(5_000);
    for (let i = 0; i < 3; i++) b.record('failure');
    advance(5_000);
    assert.equal(b.tryAcquire(), true, 'the probe');
    b.record('ignored'); // e.g. dead-lettered or short-circuited: no release() follows on every path
    assert.equal(b.state, 'HalfOpen');
    assert.equal(b.acquireWaitMs, 100, 'the slot is free again after the probe pause, not held by a probe that ended');
    advance(100);
    assert.equal(b.tryAcquire(), true, 'a new probe can be taken');
    b.record('failure', new Error('throttled', { cause: new Throttled() }));
    assert.equal(b.state, 'HalfOpen', 'an excluded error does not count');
    advance(b.acquireWaitMs);
    assert.equal(b.tryAcquire(), true, 'and gives the slot back too');
    b.record('success');
    assert.equal(b.state, 'Closed');
  });

  test('permits: a worker frees or ends only the probe it holds, whatever it records or releases', () => {
    const { b, advance } = breaker(5_000);
    const early = b.acquire();
    assert.ok(early && !early.probe, 'taken while Closed: not a probe');
    for (let i = 0; i < 3; i++) b.record('failure');
    advance(5_000);
    const probe = b.acquire();
    assert.ok(probe?.probe, 'the probe');
    assert.equal(b.acquire(), undefined, 'one probe at a time');
    // The worker that took its delivery while Closed finishes it now, with nothing to say about the endpoint.
    early.record('ignored');
    early.release();
    assert.equal(b.acquire(), undefined, "another worker's ignored outcome or release leaves the probe held");
    assert.ok(b.acquireWaitMs > 0);
    probe.record('ignored');
    probe.release(); // the host releases in a finally after recording: no second pause, no effect
    assert.equal(b.acquireWaitMs, 100, 'the probe gave its slot back once');
    advance(100);
    const next = b.acquire();
    assert.ok(next?.probe);
    probe.release(); // a stale permit
    assert.equal(b.acquire(), undefined, 'a permit whose probe ended cannot free the next probe');
    next.record('success');
    assert.equal(b.state, 'Closed');
    next.release();
    assert.equal(b.acquireWaitMs, 0);
  });
  test("permits: a Closed-era permit's late success or failure neither ends nor decides another worker's probe", () => {
    const { b, transitions, advance } = breaker(5_000);
    const lateSuccess = b.acquire();
    const lateFailure = b.acquire();
    assert.ok(lateSuccess && !lateSuccess.probe && lateFailure && !lateFailure.probe, 'taken while Closed');
    for (let i = 0; i < 3; i++) b.record('failure');
    advance(5_000);
    const probe = b.acquire();
    assert.ok(probe?.probe, 'the probe');
    // Two workers that took their deliveries while Closed finish them now: their outcomes are old news.
    lateSuccess.record('success');
    assert.equal(b.state, 'HalfOpen', "a Closed-era success does not close the circuit over another worker's probe");
    lateFailure.record('failure');
    assert.equal(b.state, 'HalfOpen', "a Closed-era failure does not reopen the circuit over another worker's probe");
    assert.equal(b.acquire(), undefined, 'the probe is still held: one probe at a time');
    probe.record('success');
    assert.equal(b.state, 'Closed', "the probe's own outcome decides");
    assert.deepEqual(transitions, ['Closed->Open', 'Open->HalfOpen', 'HalfOpen->Closed']);
  });
  test("permitless calls: record()/release() without a permit neither decide nor free a probe a permit holds", () => {
    const { b, transitions, advance } = breaker(5_000);
    for (let i = 0; i < 3; i++) b.record('failure'); // while Closed, permitless outcomes count as before
    advance(5_000);
    const probe = b.acquire();
    assert.ok(probe?.probe, "a worker's permit holds the probe");
    // A caller of the deprecated permitless API (tryAcquire, then record/release) finishing a delivery it took before.
    b.record('success');
    assert.equal(b.state, 'HalfOpen', "a permitless success does not close the circuit in the permit's place");
    b.record('failure');
    assert.equal(b.state, 'HalfOpen', "a permitless failure does not reopen the circuit in the permit's place");
    b.record('ignored');
    b.release();
    // Past the longest probe pause (a tenth of the open pause): a freed slot would be free again by now, so only a
    // probe still held keeps acquire() from taking it.
    advance(500);
    assert.equal(b.acquire(), undefined, 'nor does an ignored outcome or a release free the probe: one at a time');
    assert.equal(b.tryAcquire(), false, 'the permitless API sees the probe held too');
    probe.record('failure');
    assert.equal(b.state, 'Open', "the probe's own outcome decides");
    assert.deepEqual(transitions, ['Closed->Open', 'Open->HalfOpen', 'HalfOpen->Open']);
  });
  test('permitless calls: a probe taken by tryAcquire is ended by record()/release(), never one a permit took since', () => {
    const { b, advance } = breaker(5_000);
    for (let i = 0; i < 3; i++) b.record('failure');
    advance(5_000);
    assert.equal(b.tryAcquire(), true, 'the permitless probe');
    b.release(); // it found no message: the slot is given back, with the pause
    assert.equal(b.acquireWaitMs, 100);
    advance(100);
    const probe = b.acquire();
    assert.ok(probe?.probe, 'the next probe is a permit');
    b.release(); // the permitless caller releases again (a finally): its probe is over
    advance(500); // past the longest probe pause: a freed slot would be free again by now
    assert.equal(b.acquire(), undefined, "its release leaves the permit's probe held");
    b.record('success');
    assert.equal(b.state, 'HalfOpen', "its late success does not decide the permit's probe");
    assert.equal(b.acquire(), undefined, "the permit's probe is still held");
    probe.release();
    advance(b.acquireWaitMs);
    assert.equal(b.tryAcquire(), true, 'a permitless probe again');
    b.record('success');
    assert.equal(b.state, 'Closed', 'the permitless probe is decided by the permitless outcome, as before');
  });
  test('permitless calls: with no probe held, record(\'success\') closes a half-open circuit, as before permits', () => {
    // A caller that only records (never tryAcquire) holds no probe: were its outcome ignored, it could never leave
    // HalfOpen.
    const { b, transitions, advance } = breaker(5_000);
    for (let i = 0; i < 3; i++) b.record('failure');
    advance(5_000);
    assert.equal(b.state, 'HalfOpen');
    b.record('success');
    assert.equal(b.state, 'Closed', 'a success with no probe held closes the circuit: it is not stuck half-open');
    assert.deepEqual(transitions, ['Closed->Open', 'Open->HalfOpen', 'HalfOpen->Closed']);
  });
  test('permitless calls: with no probe held, record(\'failure\') reopens a half-open circuit; \'ignored\' changes nothing', () => {
    const { b, transitions, advance } = breaker(5_000);
    for (let i = 0; i < 3; i++) b.record('failure');
    advance(5_000);
    b.record('ignored');
    assert.equal(b.acquireWaitMs, 0, 'an outcome that says nothing, with no probe held, frees nothing and pauses nothing');
    b.record('failure');
    assert.equal(b.state, 'Open', 'a failure with no probe held opens the circuit again');
    assert.deepEqual(transitions, ['Closed->Open', 'Open->HalfOpen', 'HalfOpen->Open']);
  });
  test('half-open: a probe held past probeTimeoutMs fails, the circuit opens again and its late outcome is ignored', () => {
    const { b, transitions, advance } = breaker(5_000, 2_000);
    for (let i = 0; i < 3; i++) b.record('failure');
    advance(5_000);
    const hung = b.acquire();
    assert.ok(hung?.probe, 'the probe, whose handler then hangs');
    advance(1_999);
    assert.equal(b.acquire(), undefined, 'within its deadline the probe keeps the slot');
    assert.equal(b.acquireWaitMs, 100, 'the other workers wait for its outcome');
    advance(1);
    assert.equal(b.acquireWaitMs, 5_000, 'past its deadline: a failure, open for the whole pause');
    assert.equal(b.state, 'Open');
    assert.deepEqual(transitions, ['Closed->Open', 'Open->HalfOpen', 'HalfOpen->Open']);
    hung.record('success'); // the hung handler returns at last
    hung.release();
    assert.equal(b.state, 'Open', "a probe given up has no say: its late success does not close the circuit");
    advance(5_000);
    const next = b.acquire();
    assert.ok(next?.probe, 'the next probe, after the open pause');
    hung.record('failure');
    assert.equal(b.acquire(), undefined, "the given-up probe's late failure neither reopens the circuit nor frees the slot");
    next.record('success');
    assert.equal(b.state, 'Closed');
  });

  test("half-open: a probe's wait for a message is not a hang; its deadline counts from the delivery in hand", () => {
    // An idle endpoint's probe waits the whole receive (30 s by default, as long as the default deadline): counted
    // from acquire, the deadline opened the circuit again on an endpoint with nothing wrong, every cycle.
    const { b, transitions, advance } = breaker(5_000, 2_000);
    for (let i = 0; i < 3; i++) b.record('failure');
    advance(5_000);
    const probe = b.acquire(10_000);
    assert.ok(probe?.probe);
    advance(11_000);
    assert.equal(b.state, 'HalfOpen', 'the receive wait plus the deadline has not passed');
    probe.handling();
    advance(1_999);
    assert.equal(b.state, 'HalfOpen', 'within its deadline from the delivery in hand');
    advance(1);
    assert.equal(b.state, 'Open', 'a handler held past probeTimeoutMs from its start is given up');
    assert.deepEqual(transitions, ['Closed->Open', 'Open->HalfOpen', 'HalfOpen->Open']);
  });

  test('half-open: the probe deadline defaults to the open pause, at least 30 s, and every poll sees it', () => {
    for (const [openDurationMs, deadlineMs] of [
      [5_000, 30_000],
      [40_000, 40_000],
    ] as const) {
      const { b, transitions, advance } = breaker(openDurationMs);
      for (let i = 0; i < 3; i++) b.record('failure');
      advance(openDurationMs);
      assert.ok(b.acquire()?.probe);
      advance(deadlineMs - 1);
      assert.equal(b.state, 'HalfOpen', `open ${openDurationMs} ms: still within the deadline`);
      advance(1);
      assert.equal(b.acquire(), undefined, 'acquire refuses: the circuit opened again');
      assert.deepEqual(transitions, ['Closed->Open', 'Open->HalfOpen', 'HalfOpen->Open']);
      assert.equal(b.remainingOpenMs, openDurationMs);
    }
  });
});
