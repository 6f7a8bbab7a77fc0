// A command-line program run to its exit in its own process, for the tests of scripts/ (asynchronously: a test's
// embedded server answers from the test's own process meanwhile). Output is collected whole: these programs print
// a few lines.
import { spawn, type SpawnOptions } from 'node:child_process';

export interface Run {
  code: number | null;
  out: string;
  err: string;
}

/** `options.env` should be built from nothing (no NODE_TEST_CONTEXT or runner settings reaching the program). */
export async function runToExit(command: string, args: string[], options: Pick<SpawnOptions, 'cwd' | 'env' | 'timeout'>): Promise<Run> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, out, err };
}
