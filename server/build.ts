// Building the console (`next build`) on demand: used by the launcher when a fresh clone has no build yet and
// by the browser test, which builds once and reuses `.next` until a source file is newer than the build.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const SOURCE_DIRS = ['app', 'components', 'server', 'lib'];
const SOURCE_FILES = ['next.config.ts', 'postcss.config.mjs', 'package.json', 'tsconfig.next.json'];
const SOURCE_EXT = /\.(ts|tsx|css|json|mjs)$/;

function newestSource(dir: string): number {
  let newest = 0;
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      // Test fixtures (server/testing) are not part of the build.
      if (name === 'node_modules' || name === 'testing' || name.startsWith('.')) continue;
      const full = join(d, name);
      const st = statSync(full);
      if (st.isDirectory()) walk(full);
      else if (SOURCE_EXT.test(name) && !name.endsWith('.test.ts')) newest = Math.max(newest, st.mtimeMs);
    }
  };
  for (const sub of SOURCE_DIRS) if (existsSync(join(dir, sub))) walk(join(dir, sub));
  for (const f of SOURCE_FILES) if (existsSync(join(dir, f))) newest = Math.max(newest, statSync(join(dir, f)).mtimeMs);
  return newest;
}

/** The build output folder, as next.config.ts chooses it (NIMBUS_NEXT_DIST_DIR, default `.next`). */
export function consoleDistDir(env: Record<string, string | undefined> = process.env): string {
  return env.NIMBUS_NEXT_DIST_DIR || '.next';
}

/** True when there is no production build in `dir`/.next, or a source file changed after it was made. */
export function consoleBuildIsStale(dir: string): boolean {
  const id = join(dir, consoleDistDir(), 'BUILD_ID');
  if (!existsSync(id)) return true;
  return newestSource(dir) > statSync(id).mtimeMs;
}

/**
 * Runs `next build` in `dir` (offline; telemetry off). Rejects with the build's last output lines on failure, or
 * when `signal` aborts (the child is killed).
 */
export function buildConsole(
  dir: string,
  options: { onOutput?: (line: string) => void; signal?: AbortSignal | undefined } = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    // Resolved the way Node would from the project, so a hoisted or parent node_modules works too.
    let nextBin: string;
    try {
      nextBin = createRequire(join(dir, 'package.json')).resolve('next/dist/bin/next');
    } catch {
      reject(new Error(`next is not installed for ${dir} (run npm ci)`));
      return;
    }
    // `next build` rewrites next-env.d.ts to import its output folder's types; a build into another folder
    // (NIMBUS_NEXT_DIST_DIR) must not leave the tracked file pointing there.
    const nextEnvFile = join(dir, 'next-env.d.ts');
    const nextEnv = existsSync(nextEnvFile) ? readFileSync(nextEnvFile, 'utf8') : undefined;
    const restoreNextEnv = () => {
      if (nextEnv !== undefined && readFileSync(nextEnvFile, 'utf8') !== nextEnv) writeFileSync(nextEnvFile, nextEnv);
    };
    const child = spawn(process.execPath, [nextBin, 'build'], {
      cwd: dir,
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', NODE_ENV: 'production' },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const tail: string[] = [];
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line.trim()) continue;
        tail.push(line);
        if (tail.length > 30) tail.shift();
        options.onOutput?.(line);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (error) => {
      restoreNextEnv();
      reject(options.signal?.aborted ? new Error('next build interrupted') : error);
    });
    child.on('exit', (code) => {
      restoreNextEnv();
      if (options.signal?.aborted) reject(new Error('next build interrupted'));
      else if (code === 0) resolve();
      else reject(new Error(`next build failed (exit ${code}):\n${tail.join('\n')}`));
    });
  });
}

/** Builds only when needed; returns whether it built. */
export async function ensureConsoleBuilt(
  dir: string,
  options: { onOutput?: (line: string) => void; signal?: AbortSignal | undefined } = {},
): Promise<boolean> {
  if (!consoleBuildIsStale(dir)) return false;
  await buildConsole(dir, options);
  return true;
}
