// The graceful stop's order and deadline (server/shutdown.ts) on a stand-in process: the server's own handler (Next's)
// runs beside the duties' stop, its exit waits for them, the clients close last, and a stop that hangs exits 1 at
// the deadline. The real thing - the standalone server on SIGTERM, its leases released - is server/standalone.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import {
  DEFAULT_STOP_GRACE_MS,
  leaveSignalsToLauncher,
  stopConsoleGracefullyOnSignals,
  stopGraceMs,
  stopGracefullyOnSignals,
  type SignalProcess,
} from './shutdown.ts';
import { stoppingSignal } from './stopping.ts';

/** A process stand-in: signals are events, and exit resolves `exited` with its code instead of ending anything. */
function fakeProcess() {
  const emitter = new EventEmitter();
  let exited!: (code: number | undefined) => void;
  const exitedWith = new Promise<number | undefined>((resolve) => (exited = resolve));
  const proc = Object.assign(emitter, { exit: ((code?: number) => exited(code)) as unknown as SignalProcess['exit'] });
  return { proc: proc as unknown as SignalProcess & EventEmitter, exitedWith };
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

test('NIMBUS_STOP_GRACE_MS: the default when unset, a whole number of ms within bounds, otherwise an error naming it', () => {
  assert.equal(stopGraceMs({}), DEFAULT_STOP_GRACE_MS);
  assert.equal(stopGraceMs({ NIMBUS_STOP_GRACE_MS: ' ' }), DEFAULT_STOP_GRACE_MS);
  assert.equal(stopGraceMs({ NIMBUS_STOP_GRACE_MS: '20000' }), 20_000);
  for (const bad of ['soon', '1.5', '50', '700000', '-1'])
    assert.throws(() => stopGraceMs({ NIMBUS_STOP_GRACE_MS: bad }), /NIMBUS_STOP_GRACE_MS/, bad);
});

// First of the stops in this file: the signal is process-wide, and once aborted it stays so.
test('the stop aborts the process-wide stopping signal first, before the server\'s handler runs (long-polls end on it)', async () => {
  const { proc, exitedWith } = fakeProcess();
  let abortedWhenServerStopped: boolean | undefined;
  proc.on('SIGTERM', () => {
    abortedWhenServerStopped = stoppingSignal().aborted;
    proc.exit(143);
  });
  stopGracefullyOnSignals({ proc, graceMs: 3_600_000, stopDuties: async () => undefined, closeClients: async () => undefined });
  assert.equal(stoppingSignal().aborted, false);
  proc.emit('SIGTERM', 'SIGTERM');
  assert.equal(abortedWhenServerStopped, true);
  assert.equal(await exitedWith, 0);
});

test("SIGTERM: the server's own handler runs beside the duties' stop; its exit waits for them, then the clients close and the process exits 0", async () => {
  const { proc, exitedWith } = fakeProcess();
  const steps: string[] = [];
  const duties = deferred();
  // Next's handler: closes its server, then exits (143 on SIGTERM).
  proc.on('SIGTERM', () => {
    steps.push('server closing');
    void Promise.resolve().then(() => {
      steps.push('server closed');
      proc.exit(143);
    });
  });
  const installed = stopGracefullyOnSignals({
    proc,
    graceMs: 3_600_000,
    stopDuties: async () => {
      steps.push('duties stopping');
      await duties.promise;
      steps.push('duties stopped');
    },
    closeClients: async () => {
      steps.push('clients closed');
    },
  });
  assert.equal(installed, true);
  assert.equal(proc.listenerCount('SIGTERM'), 1, "the server's handler is taken over, not left to run on its own");

  proc.emit('SIGTERM', 'SIGTERM');
  proc.emit('SIGTERM', 'SIGTERM'); // a second signal does not start a second stop
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(steps, ['server closing', 'duties stopping', 'server closed'], "the server's exit is held while the duties stop");
  duties.resolve();
  assert.equal(await exitedWith, 0);
  assert.deepEqual(steps, ['server closing', 'duties stopping', 'server closed', 'duties stopped', 'clients closed']);
});

test('a stop still running at the deadline exits 1', async () => {
  const { proc, exitedWith } = fakeProcess();
  proc.on('SIGINT', () => proc.exit(130));
  let closed = false;
  stopGracefullyOnSignals({
    proc,
    graceMs: 100,
    stopDuties: () => new Promise<void>(() => undefined), // never ends: a store that stopped answering
    closeClients: async () => {
      closed = true;
    },
  });
  proc.emit('SIGINT', 'SIGINT');
  assert.equal(await exitedWith, 1);
  assert.equal(closed, false);
});

test('a code asked for during a stop that then runs into the deadline stands (not 1)', async () => {
  const { proc, exitedWith } = fakeProcess();
  proc.on('SIGTERM', () => proc.exit(0)); // a handler that is not Next's: its exit is not "the server closed"
  stopGracefullyOnSignals({ proc, graceMs: 100, stopDuties: async () => undefined, closeClients: async () => undefined });
  proc.emit('SIGTERM', 'SIGTERM');
  assert.equal(await exitedWith, 1, 'exit(0) is no failure to keep: the deadline exits 1');
  const second = fakeProcess();
  second.proc.on('SIGTERM', () => second.proc.exit(4));
  stopGracefullyOnSignals({ proc: second.proc, graceMs: 100, stopDuties: async () => undefined, closeClients: async () => undefined });
  second.proc.emit('SIGTERM', 'SIGTERM');
  assert.equal(await second.exitedWith, 4, 'the code asked for, not the deadline\'s 1');
});

test("another process.exit during the stop keeps its code for the final exit; Next's own (143) only says its server closed; proc.exit is given back", async () => {
  const { proc, exitedWith } = fakeProcess();
  const exit = proc.exit;
  const duties = deferred();
  proc.on('SIGTERM', () => {
    proc.exit(3); // e.g. a failure elsewhere asking for exit code 3 while the stop runs
    void Promise.resolve().then(() => proc.exit(143));
  });
  stopGracefullyOnSignals({ proc, graceMs: 3_600_000, stopDuties: () => duties.promise, closeClients: async () => undefined });
  proc.emit('SIGTERM', 'SIGTERM');
  await new Promise((r) => setImmediate(r));
  assert.notEqual(proc.exit, exit, 'held while the stop runs');
  duties.resolve();
  assert.equal(await exitedWith, 3, 'the code asked for, not 0');
  assert.equal(proc.exit, exit, 'the process exits as usual after the stop');
});

test('SIGINT: Next exits 130 once its server closed; the stop exits 0', async () => {
  const { proc, exitedWith } = fakeProcess();
  const exit = proc.exit;
  proc.on('SIGINT', () => void Promise.resolve().then(() => proc.exit(130)));
  stopGracefullyOnSignals({ proc, graceMs: 3_600_000, stopDuties: async () => undefined, closeClients: async () => undefined });
  proc.emit('SIGINT', 'SIGINT');
  assert.equal(await exitedWith, 0);
  assert.equal(proc.exit, exit);
});

test("no handler to take over (NEXT_MANUAL_SIG_HANDLE), or one taken over already: nothing installed", () => {
  const { proc } = fakeProcess();
  const options = { proc, graceMs: 1_000, stopDuties: async () => undefined, closeClients: async () => undefined };
  assert.equal(stopGracefullyOnSignals(options), false);
  assert.equal(proc.listenerCount('SIGTERM'), 0);
  proc.on('SIGTERM', () => undefined);
  assert.equal(stopGracefullyOnSignals(options), true);
  assert.equal(stopGracefullyOnSignals(options), false);
  assert.equal(proc.listenerCount('SIGTERM'), 1);
});

test("a console started by a launcher (server/console.ts) keeps the launcher's signal handlers", () => {
  const handler = () => undefined;
  process.on('SIGTERM', handler);
  try {
    leaveSignalsToLauncher();
    assert.equal(stopConsoleGracefullyOnSignals({}), false);
    assert.ok(process.listeners('SIGTERM').includes(handler));
  } finally {
    process.off('SIGTERM', handler);
  }
});
