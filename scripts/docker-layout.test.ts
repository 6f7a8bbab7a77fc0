// The Docker image's runtime stage without a Docker engine: the files its COPY lines put in /app are laid out from
// this checkout in a temporary folder, less what .dockerignore keeps out of the build context, and the roles that run from TypeScript (resolver, recount, demo) are started
// there through the image's entry point. Each must get past loading its modules, which only the files the image
// holds can make possible (tsx resolving @nimbus/sdk, for instance), and stop at its own configuration error: the
// environment holds no bus or store settings, so no role reaches a network. The layout holds no test: no role may
// import one.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDockerIgnore } from './testing/dockerignore.ts';
import { copyFromBuildContext } from './testing/buildContext.ts';
import { runToExit, type Run } from './testing/runToExit.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The image's WORKDIR in every stage; the COPY lines name paths under it. */
const WORKDIR = '/app';
/** A role that hangs instead of exiting is killed, and fails its test, after this long (a bound, not a measurement). */
const ROLE_TIMEOUT_MS = 120_000;

interface Copy {
  /**
   * The path in this checkout that the stage named by --from holds at `src` (the build stages copy the checkout,
   * less what .dockerignore keeps out of the build context).
   */
  source: string;
  /** Where the runtime stage puts it, relative to its WORKDIR. */
  target: string;
}

/** The Dockerfile's stages in order, each as its instruction lines (continuation lines joined, comments dropped). */
function stages(dockerfile: string): string[][] {
  const result: string[][] = [];
  for (const line of dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())) {
    if (/^FROM\s/i.test(line)) result.push([]);
    else if (line && !line.startsWith('#')) result.at(-1)?.push(line);
  }
  assert.ok(result.length > 0, 'the Dockerfile has no FROM');
  return result;
}

/** A COPY line's sources and its target, flags (--from, --chown) left out. */
function copyPaths(line: string): { sources: string[]; target: string } | undefined {
  const words = line.split(/\s+/);
  if (words[0]?.toUpperCase() !== 'COPY') return undefined;
  const paths = words.slice(1).filter((w) => !w.startsWith('--'));
  const target = paths.pop();
  assert.ok(target !== undefined && paths.length > 0, `a source and a target expected: ${line}`);
  return { sources: paths, target };
}

/** The last stage's COPY lines, as checkout paths and WORKDIR-relative targets. */
function runtimeCopies(dockerfile: string): Copy[] {
  const stage = stages(dockerfile).at(-1) ?? [];
  assert.ok(stage.includes(`WORKDIR ${WORKDIR}`), `the runtime stage's WORKDIR is not ${WORKDIR}`);
  return stage.flatMap((line) => {
    const paths = copyPaths(line);
    if (!paths) return [];
    const [src, ...more] = paths.sources;
    assert.ok(src !== undefined && more.length === 0, `one source expected: ${line}`);
    const dst = paths.target;
    return [
      {
        source: posix.relative(WORKDIR, posix.resolve(WORKDIR, src)),
        target: posix.relative(WORKDIR, posix.resolve(WORKDIR, dst)),
      },
    ];
  });
}

/**
 * node_modules as `npm ci` leaves it in the image: every package linked to this checkout's copy (Node follows the
 * link to its real path, so the package's own dependencies resolve as here), except a link npm made itself (the
 * workspace package @nimbus/sdk -> ../../packages/sdk), recreated as the same relative link: it resolves against
 * the temporary folder, as it resolves against /app in the image, and dangles where the image lacks its target.
 */
async function layOutNodeModules(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const name of await readdir(from)) {
    const entry = join(from, name);
    const stat = await lstat(entry);
    if (stat.isSymbolicLink()) await symlink(await readlink(entry), join(to, name));
    else if (name.startsWith('@') && stat.isDirectory()) await layOutNodeModules(entry, join(to, name));
    else await symlink(entry, join(to, name));
  }
}

/**
 * Whether `path` is a file or a folder with a file somewhere under it: a folder .dockerignore does not leave out but
 * whose files it all does is in the build context, and copied, as an empty folder (tree).
 */
async function holdsAFile(path: string): Promise<boolean> {
  if (!existsSync(path)) return false;
  if (!(await stat(path)).isDirectory()) return true;
  return (await readdir(path, { recursive: true, withFileTypes: true })).some((e) => !e.isDirectory());
}

let dockerfile: string;
let app: string;
before(async () => {
  dockerfile = await readFile(join(ROOT, 'Dockerfile'), 'utf8');
  const ignore = parseDockerIgnore(await readFile(join(ROOT, '.dockerignore'), 'utf8'));
  const copies = runtimeCopies(dockerfile);
  app = await mkdtemp(join(tmpdir(), 'nimbus-image-layout-'));
  for (const { source, target } of copies) {
    // The standalone console (.next/standalone) is the build's output, not needed by these roles; the standalone
    // server has its own test (server/standalone.test.ts).
    if (source === '.next' || source.startsWith('.next/')) continue;
    if (source === 'node_modules') await layOutNodeModules(join(ROOT, 'node_modules'), join(app, target));
    // A path the checkout lacks fails here, as it would fail `docker build`; so does one .dockerignore keeps out of
    // the build context (the filter would copy nothing of it, silently). Judged by what was copied, so a folder left
    // out whose files a `!` line brings back still counts, as Docker sends those files.
    else {
      await copyFromBuildContext(ROOT, ignore, source, join(app, target));
      assert.ok(await holdsAFile(join(app, target)), `the Dockerfile copies ${source}, which .dockerignore keeps out of the build context`);
    }
  }
});
after(async () => {
  if (app) await rm(app, { recursive: true, force: true });
});

/** A role through the image's entry point, from the laid-out WORKDIR; an environment with no NIMBUS_* settings. */
async function runRole(role: string): Promise<Run> {
  return runToExit('sh', ['scripts/docker-role.sh', role], {
    cwd: app,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production' },
    timeout: ROLE_TIMEOUT_MS,
  });
}

/** Got past module loading: the role's own exit 2 and message, not a module the image lacks. */
function assertOwnConfigurationError(r: Run, message: RegExp): void {
  assert.doesNotMatch(r.err, /ERR_MODULE_NOT_FOUND|Cannot find/, r.err);
  assert.equal(r.code, 2, r.err);
  assert.match(r.err, message);
}

test('resolver role in the image layout: loads its modules, then names the settings it lacks', async () => {
  assertOwnConfigurationError(
    await runRole('resolver'),
    /the Resolver cannot start; fix these environment variables/,
  );
});

test('recount role in the image layout: loads its modules, then prints its usage in the form the image runs it', async () => {
  const r = await runRole('recount');
  assertOwnConfigurationError(r, /^usage: docker run --rm <image> recount <endpoint id>/m);
  assert.doesNotMatch(r.err, /npm run/, 'the usage names the form the role was run in');
});

test('demo role in the image layout: loads its modules, then names the bus setting it lacks', async () => {
  assertOwnConfigurationError(await runRole('demo'), /^demo: .*NIMBUS_SERVICEBUS/m);
});

/** The layout's files and folders below `dir`, relative to it; node_modules (npm's) and the console's build left out. */
async function layoutPaths(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(dir, rel), { withFileTypes: true })) {
    const path = rel ? `${rel}/${entry.name}` : entry.name;
    if (path === 'node_modules' || path === 'console') continue;
    out.push(path);
    if (entry.isDirectory()) out.push(...(await layoutPaths(dir, path)));
  }
  return out;
}

test('the image layout holds no test, test harness or test fixture folder (the roles above start without them)', async () => {
  const paths = await layoutPaths(app);
  assert.ok(paths.includes('scripts/recount.ts') && paths.includes('lib/store/index.ts'), 'the layout was laid out');
  const tests = paths.filter((p) => /\.test\.tsx?$/.test(p) || /(^|\/)testing$/.test(p) || /harness[^/]*$/i.test(p));
  assert.deepEqual(tests, [], 'test files in the runtime image');
});

test('the workspace link node_modules/@nimbus/sdk resolves in the image layout', async () => {
  const manifest = JSON.parse(
    await readFile(join(app, 'node_modules', '@nimbus', 'sdk', 'package.json'), 'utf8'),
  ) as { name?: string };
  assert.equal(manifest.name, '@nimbus/sdk');
});

test('the dependencies stage copies every workspace manifest before `npm ci`, which links the workspaces from them', async () => {
  const { workspaces } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    workspaces: string[];
  };
  const deps = stages(dockerfile).find((stage) => stage.some((line) => /^RUN npm ci\b/.test(line)));
  assert.ok(deps, 'no stage runs npm ci');
  const copiedBefore = deps
    .slice(
      0,
      deps.findIndex((line) => /^RUN npm ci\b/.test(line)),
    )
    .flatMap((line) => copyPaths(line)?.sources ?? [])
    .map((src) => posix.normalize(src));
  for (const workspace of workspaces)
    assert.ok(
      copiedBefore.includes(posix.join(workspace, 'package.json')),
      `${workspace}/package.json is not copied before npm ci`,
    );
});
