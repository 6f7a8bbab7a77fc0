// `npm start` (or `npm run dev`) as the user runs it, for the tests that must see what the user sees:
// `node --import tsx scripts/start.ts` in a child process, on ports 0 (the console's address is read from its
// output), with a data folder of its own in the temporary directory and no demo unless asked. The output is
// watched as it arrives: a wait ends on the line it waits for, or as soon as the process is gone.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONSOLE_DIR } from '../console.ts';

export interface StartedPlatform {
  /** stdout and stderr as printed so far, in the order they arrived. */
  readonly output: string;
  /** stdout alone: its lines are whole (stderr's are not cut into them). */
  readonly stdout: string;
  /** The first match of `pattern` in the output; rejects, with the output's tail, when the process ends first. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** Ctrl-C (SIGINT), then the exit code once the process and its output have ended. */
  interrupt(): Promise<number | null>;
  /** For `after`: kills the process if it still runs (a test failed before stopping it), removes its data folder. */
  cleanup(): void;
}

/**
 * Starts the platform as `npm start` does; `args` are its arguments (`--dev` for `npm run dev`) and `env` adds to
 * or overrides the defaults (ports 0, NIMBUS_DEMO=0, NO_COLOR=1, a fresh NIMBUS_DATA_DIR).
 */
export function startPlatformProcess(options: { name: string; args?: string[]; env?: Record<string, string> }): StartedPlatform {
  const dataDir = mkdtempSync(join(tmpdir(), 'nimbus-start-'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts', ...(options.args ?? [])], {
    cwd: CONSOLE_DIR,
    env: {
      ...process.env,
      PORT: '0',
      NIMBUS_EMULATOR_PORT: '0',
      NIMBUS_COSMOS_PORT: '0',
      NIMBUS_DATA_DIR: dataDir,
      NIMBUS_DEMO: '0',
      NO_COLOR: '1',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stdout = '';
  let closed = false;
  // Each pending wait checks again whenever something arrives or the process ends.
  const watchers = new Set<() => void>();
  const changed = () => {
    for (const w of [...watchers]) w();
  };
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    output += d;
    stdout += d;
    changed();
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    output += d;
    changed();
  });
  // 'close', not 'exit': by then all of the output has been read.
  const ended = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      closed = true;
      resolve(code);
      changed();
    }),
  );
  const tail = () => output.slice(-3000);

  return {
    get output() {
      return output;
    },
    get stdout() {
      return stdout;
    },
    waitFor(pattern, timeoutMs) {
      return new Promise((resolve, reject) => {
        const finish = (settle: () => void) => {
          clearTimeout(deadline);
          watchers.delete(check);
          settle();
        };
        const check = () => {
          const m = output.match(pattern);
          if (m) finish(() => resolve(m));
          else if (closed) finish(() => reject(new Error(`${options.name} exited:\n${tail()}`)));
        };
        const deadline = setTimeout(() => finish(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${tail()}`))), timeoutMs);
        watchers.add(check);
        check();
      });
    },
    interrupt() {
      child.kill('SIGINT');
      return ended;
    },
    cleanup() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
