// The console's test stack as a file's hooks, for tests that call the console's route handlers and modules in this
// process: `useConsoleStack` registers the `before` that starts the embedded stack (stack.ts, real clients), points
// the environment the handlers read at it and seeds it, and the `after` that stops what the handlers opened on it
// (the operations services, then the console context) before the stack itself. The one place of that order, which
// every such file used to write out (as emulator/conformance/helpers.ts's useHarness does for the emulator).
//
// The handle it returns is filled in by the `before`, so a file keeps `stack.store` or `stack.serviceBus` as it was.
// A file's own set-up goes in `prepare`, not in a `before` of its own: node:test starts a file's top-level `before`
// hooks as they are registered, without waiting for the one before, so a second one would find the stack not yet
// started. Top-level `after` hooks do run one after another in order: a file's own runs after this one's.
import { after, before } from 'node:test';
import { seedConsoleData } from './seed.ts';
import { startConsoleTestStack, type ConsoleTestStack, type TestEmulatorOptions } from './stack.ts';

export type DemoRows = Awaited<ReturnType<typeof seedConsoleData>>;

export interface ConsoleStackOptions {
  /** The stack's Cosmos database (default `nimbus`): a file of its own keeps its rows apart. */
  database?: string;
  /** The embedded emulator's options (default none), e.g. `maxMessageSizeBytes` below the console's limit. */
  emulator?: TestEmulatorOptions;
  /**
   * Variables over the stack's, set in process.env with them; a function for values that need the started stack or
   * a start of their own.
   */
  env?:
    | Record<string, string>
    | ((stack: ConsoleTestStack) => Record<string, string> | Promise<Record<string, string>>);
  /** The demo rows of seed.ts, written after the environment is set (default off). */
  seed?: boolean;
  /** The file's own set-up, after the rows: its rows, broker state, the modules it loads once the environment is set. */
  prepare?: (stack: UsedConsoleStack) => Promise<void>;
}

export interface UsedConsoleStack extends ConsoleTestStack {
  /** The demo rows (with `seed`); filled in place, so `const seeded = stack.demo` may be taken at load. */
  demo: DemoRows;
}

export function useConsoleStack(options: ConsoleStackOptions = {}): UsedConsoleStack {
  const handle = { demo: {} } as UsedConsoleStack;
  let started: ConsoleTestStack | undefined;
  before(async () => {
    started = await startConsoleTestStack(options.database, options.emulator);
    const { demo } = handle;
    Object.assign(handle, started, { demo });
    const env = typeof options.env === 'function' ? await options.env(started) : options.env;
    Object.assign(process.env, started.env, env);
    if (options.seed) Object.assign(demo, await seedConsoleData(started.store));
    await options.prepare?.(handle);
  });
  after(async () => {
    // Absent when the start itself failed: that failure is the one to report.
    if (!started) return;
    // Loaded only now, as the handlers load them: the console's modules read settings when first loaded, after the
    // environment above is set. The operations runner writes through the context's clients: it stops first.
    try {
      await (await import('../heartbeat/services.ts')).closeOpsServices();
      await (await import('../context.ts')).closeContext();
    } finally {
      await started.close();
    }
  });
  return handle;
}
