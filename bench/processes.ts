// What the benchmarks share about processes: the emulator in a child process (so client and broker run on separate
// cores), another process's CPU time, and phase marks for cutting a CPU profile.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * With BENCH_PHASE_MARKS=1, prints the monotonic clock in microseconds at a phase boundary to stderr. It is the
 * clock of V8's --cpu-prof samples (in every process on the machine), so a profile can be cut to one phase.
 */
export function markPhase(name: string): void {
  if (process.env.BENCH_PHASE_MARKS !== '1') return;
  process.stderr.write(`phase ${name} ${process.hrtime.bigint() / 1000n}\n`);
}

/** CPU time of another process from /proc (Linux), in ms; undefined where /proc is not available. */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // Fields after the command name (which is in parentheses): utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks / 100) * 1000; // USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

export interface EmulatorProcess {
  connectionString: string;
  pid: number | undefined;
  /** CPU time (user + system, ms) the emulator process used so far. */
  cpuMs(): number | undefined;
  close(): Promise<void>;
}

/** Starts `emulator/cli.ts` in a child process; `nodeArgs` go before the script (e.g. --cpu-prof). */
export async function startEmulatorProcess(options: { nodeArgs?: string[]; logLevel?: string } = {}): Promise<EmulatorProcess> {
  const cli = fileURLToPath(new URL('../emulator/cli.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), '--import', 'tsx', cli, '--port', '0', '--log-level', options.logLevel ?? 'warn'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const connectionString = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('emulator child did not print its connection string')), 30_000);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      const line = out.split('\n').find((l) => l.startsWith('Endpoint='));
      if (line) {
        clearTimeout(timer);
        resolve(line.trim());
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`emulator child exited with ${code}`));
    });
  });
  return {
    connectionString,
    pid: child.pid,
    cpuMs: () => processCpuMs(child.pid),
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
