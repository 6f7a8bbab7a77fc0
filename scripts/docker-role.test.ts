// The image's entry point (scripts/docker-role.sh) without a Docker engine: the script run by `sh` from a folder laid
// out as the image's WORKDIR (/app holds scripts/, lib/, resolver-worker/ and node_modules/, as this checkout does).
// A fake `node` first on PATH shows the exact command a role execs; the real `node` shows that command runs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runToExit, type Run } from './testing/runToExit.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'docker-role.sh');

let fakeBin: string;
before(async () => {
  fakeBin = await mkdtemp(join(tmpdir(), 'nimbus-docker-role-'));
  // Prints its working folder and each argument, NUL-separated, so an argument's spaces would show.
  await writeFile(join(fakeBin, 'node'), '#!/bin/sh\nprintf \'%s\\0\' "$PWD" "$@"\n');
  await chmod(join(fakeBin, 'node'), 0o755);
});
after(async () => {
  if (fakeBin) await rm(fakeBin, { recursive: true, force: true });
});

/** The role script in its own process, from ROOT; an environment built from nothing but PATH (no NIMBUS_*). */
async function runRole(args: string[], path: string): Promise<Run> {
  return runToExit('sh', [SCRIPT, ...args], { cwd: ROOT, env: { PATH: path } });
}

/** What the fake node was started with: [working folder, ...arguments]. */
async function execed(args: string[]): Promise<string[]> {
  const r = await runRole(args, `${fakeBin}:${process.env.PATH ?? ''}`);
  assert.equal(r.code, 0, r.err);
  return r.out.split('\0').slice(0, -1);
}

test('recount: runs scripts/recount.ts through tsx, as the resolver role runs its program, with the arguments after the role', async () => {
  assert.deepEqual(await execed(['resolver']), [ROOT.replace(/\/$/, ''), '--import', 'tsx', 'resolver-worker/main.ts']);
  assert.deepEqual(await execed(['recount', '--all']), [ROOT.replace(/\/$/, ''), '--import', 'tsx', 'scripts/recount.ts', '--all']);
  assert.deepEqual((await execed(['recount', 'billingendpoint', 'shippingendpoint'])).slice(1), [
    '--import',
    'tsx',
    'scripts/recount.ts',
    'billingendpoint',
    'shippingendpoint',
  ]);
  assert.deepEqual((await execed(['recount', 'an id with spaces'])).slice(1).at(-1), 'an id with spaces');
  assert.deepEqual((await execed(['recount'])).slice(1), ['--import', 'tsx', 'scripts/recount.ts']);
});

test('recount with the real node: the command starts and answers as `npm run recount` does, its usage in the docker form', async () => {
  const path = process.env.PATH ?? '';
  // No argument: the command's own usage (there is no implicit full recount), naming the way it was run, exit 2.
  const bare = await runRole(['recount'], path);
  assert.equal(bare.code, 2, bare.err);
  assert.match(bare.err, /^usage: docker run --rm <image> recount <endpoint id>\.\.\./m);
  assert.match(bare.err, /^ {7}docker run --rm <image> recount --all/m);
  assert.doesNotMatch(bare.err, /npm run/);
  // A usage mistake shows the same form.
  const both = await runRole(['recount', '--all', 'billingendpoint'], path);
  assert.equal(both.code, 2, both.err);
  assert.match(both.err, /^recount: give either --all or endpoint ids, not both\nusage: docker run --rm <image> recount/m);
  // `--all` reached it: past the usage, it names the missing store setting (never a value), exit 2.
  const all = await runRole(['recount', '--all'], path);
  assert.equal(all.code, 2, all.err);
  assert.doesNotMatch(all.err, /usage:/);
  assert.match(all.err, /NIMBUS_COSMOS_ENDPOINT/);
});

test('an unknown role: the usage names every role, recount with its arguments, exit 2', async () => {
  const r = await runRole(['recounts'], process.env.PATH ?? '');
  assert.equal(r.code, 2);
  assert.equal(r.err.trim(), 'usage: docker run nimbus [console|resolver|demo|recount <endpoint id>...|recount --all]');
});
