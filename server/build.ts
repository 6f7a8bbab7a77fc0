// Building the console (`next build`) on demand: used by the launcher when a fresh clone has no build yet or the
// sources changed, and by the browser tests, which build once and reuse `.next` while the sources are the same.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

// The SDK package's sources are part of the console (it imports @nimbus/sdk by name, resolved to packages/sdk/src).
const SOURCE_DIRS = ['app', 'components', 'server', 'lib', 'packages/sdk/src'];
const SOURCE_FILES = [
  'next.config.ts',
  'instrumentation.ts',
  'proxy.ts',
  'postcss.config.mjs',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.next.json',
  'packages/sdk/package.json',
];
const SOURCE_EXT = /\.(ts|tsx|css|json|mjs)$/;
/** Written beside BUILD_ID after a build: the hash of the sources it was built from. */
const SOURCE_HASH_FILE = 'nimbus-source-hash';

/** The console's source files under `dir`, relative and sorted, so the hash does not depend on directory order. */
function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel))) {
      // Test fixtures (server/testing) and tests are not part of the build.
      if (name === 'node_modules' || name === 'testing' || name.startsWith('.')) continue;
      const child = rel ? `${rel}/${name}` : name;
      if (statSync(join(dir, child)).isDirectory()) walk(child);
      else if (SOURCE_EXT.test(name) && !name.endsWith('.test.ts')) out.push(child);
    }
  };
  for (const sub of SOURCE_DIRS) if (existsSync(join(dir, sub))) walk(sub);
  for (const f of SOURCE_FILES) if (existsSync(join(dir, f))) out.push(f);
  return out.sort();
}

/**
 * A hash of the console's sources and build configuration: names and contents, not modification times, so a
 * checkout or a `touch` that changes no byte does not force a rebuild, and an edit always does, whatever time the
 * file system gives it.
 */
export function consoleSourceHash(dir: string): string {
  const hash = createHash('sha256');
  for (const file of sourceFiles(dir)) {
    hash.update(file);
    hash.update('\0');
    hash.update(readFileSync(join(dir, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** The build output folder, as next.config.ts chooses it (NIMBUS_NEXT_DIST_DIR, default `.next`). */
export function consoleDistDir(env: Record<string, string | undefined> = process.env): string {
  return env.NIMBUS_NEXT_DIST_DIR || '.next';
}

/** Records that the build in `dir` was made from sources with this hash. */
export function recordConsoleBuild(dir: string, sourceHash: string): void {
  writeFileSync(join(dir, consoleDistDir(), SOURCE_HASH_FILE), `${sourceHash}\n`);
}

/**
 * True when there is no production build in `dir`, or it was made from other sources than the ones there now. A
 * build that records no hash (made by `next build` directly) counts as stale: its sources are unknown.
 */
export function consoleBuildIsStale(dir: string): boolean {
  const dist = join(dir, consoleDistDir());
  if (!existsSync(join(dist, 'BUILD_ID')) || !existsSync(join(dist, SOURCE_HASH_FILE))) return true;
  return readFileSync(join(dist, SOURCE_HASH_FILE), 'utf8').trim() !== consoleSourceHash(dir);
}

/**
 * `next build` and `next dev` rewrite next-env.d.ts to import their output folder's types (`.next/dev/…` for the
 * development server, another folder with NIMBUS_NEXT_DIST_DIR); the tracked file must not be left pointing
 * there. Returns the function that puts the file back as it was now.
 */
export function keepNextEnv(dir: string): () => void {
  const file = join(dir, 'next-env.d.ts');
  const before = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  return () => {
    if (before !== undefined && readFileSync(file, 'utf8') !== before) writeFileSync(file, before);
  };
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
    const restoreNextEnv = keepNextEnv(dir);
    // Hashed before the build starts: an edit made while it runs leaves the build stale, as it should.
    const sourceHash = consoleSourceHash(dir);
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
      else if (code === 0) {
        try {
          completeStandalone(dir);
        } catch (error) {
          reject(new Error(`copying the static files into the standalone server failed: ${(error as Error).message}`));
          return;
        }
        recordConsoleBuild(dir, sourceHash);
        resolve();
      } else reject(new Error(`next build failed (exit ${code}):\n${tail.join('\n')}`));
    });
  });
}

/** The standalone server's folder (`output: 'standalone'`): server.js and the traced node_modules. */
export function standaloneDir(dir: string, env: Record<string, string | undefined> = process.env): string {
  return join(dir, consoleDistDir(env), 'standalone');
}

/**
 * `next build` traces the server's files into `<dist>/standalone` but leaves out what a CDN would usually serve:
 * the client bundles (`<dist>/static`) and `public/`. Without them the standalone server's pages load no
 * JavaScript or CSS, so they are copied in (replacing the previous build's). The catalog is copied too, so the
 * server finds the default NIMBUS_CATALOG (catalog/demo.json) relative to its own folder.
 */
export function completeStandalone(dir: string): void {
  const standalone = standaloneDir(dir);
  if (!existsSync(join(standalone, 'server.js'))) return; // built without output: 'standalone'
  const dist = consoleDistDir();
  const copies: Array<[string, string]> = [
    [join(dir, dist, 'static'), join(standalone, basename(dist), 'static')],
    [join(dir, 'public'), join(standalone, 'public')],
    [join(dir, 'catalog'), join(standalone, 'catalog')],
  ];
  for (const [from, to] of copies) {
    if (!existsSync(from)) continue;
    rmSync(to, { recursive: true, force: true });
    cpSync(from, to, { recursive: true });
  }
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
