// The SDK as an adapter author gets it: the packed tarball installed into a copy of examples/adapter in a folder
// outside the repository, compiled under strict settings (exactOptionalPropertyTypes, erasableSyntaxOnly,
// module nodenext), imported from plain JavaScript, and the example's own test run with Node against
// `npm run emulator` — no tsx, no path into the repository's sources. The tarball's file list is checked too: it
// ships what adapters import, not the SDK's own test fakes and test files.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = process.cwd();

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env, timeout = 300_000) {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed (status ${r.status}):\n${out.slice(-4000)}`);
  return out;
}

async function startEmulator(): Promise<{ child: ChildProcess; connectionString: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'emulator/cli.ts', '--port', '0', '--log-level', 'warn'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const connectionString = await new Promise<string>((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`the emulator printed no connection string: ${buf}`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const line = buf.split('\n').find((l) => l.startsWith('Endpoint='));
      if (line) {
        clearTimeout(timer);
        resolve(line.trim());
      }
    });
    child.once('exit', (code) => reject(new Error(`the emulator exited (${code}): ${buf}`)));
  });
  return { child, connectionString };
}

let tarball: string;

before(() => {
  const packed = run(process.execPath, ['scripts/pack-sdk.mjs'], root).trim().split('\n');
  tarball = packed[packed.length - 1]!;
  assert.match(tarball, /nimbus-sdk-[\d.]+\.tgz$/);
});

/** The tarball's files, without npm's `package/` prefix. */
function packedFiles(): string[] {
  const r = spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' });
  assert.equal(r.status, 0, `tar -tzf ${tarball} failed (status ${r.status}): ${r.stderr}`);
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((f) => f.replace(/^package\//, ''));
}

test('the packed SDK ships no test fake and no test file', () => {
  const files = packedFiles();
  // The list is read for real: the harness adapters import is in it.
  assert.ok(files.includes('dist/testing/harness.js'), `dist/testing/harness.js missing from: ${files.join(', ')}`);
  // The SDK's own unit-test fakes (src/testing/fake*.ts: fakeSessionBroker, fakeDeliveryPort) are unexported and
  // import nothing an adapter needs; a compiled test file would run its tests on import.
  const testOnly = files.filter((f) => /(^|\/)fake[^/]*$/i.test(f) || /\.test\.[^/]+$/.test(f));
  assert.deepEqual(testOnly, [], 'test-only files in the packed SDK');
});

test('a clean folder installs the packed SDK, compiles the example under strict settings and passes its test', { timeout: 600_000 }, async () => {

  const dir = mkdtempSync(join(tmpdir(), 'nimbus-adapter-'));
  try {
    const app = join(dir, 'adapter');
    cpSync(join(root, 'examples/adapter'), app, {
      recursive: true,
      filter: (src) => !/[\\/](node_modules|dist)$/.test(src),
    });
    const pkg = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    pkg.dependencies['@nimbus/sdk'] = `file:${tarball}`;
    writeFileSync(join(app, 'package.json'), JSON.stringify(pkg, null, 2));

    // The registry's packages come from npm's cache when the repository's own install already fetched them.
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], app);
    run(process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '-p', '.'], app);

    // Plain JavaScript, no TypeScript anywhere: every entry point loads.
    const loaded = run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "for (const e of ['@nimbus/sdk', '@nimbus/sdk/contract', '@nimbus/sdk/contract/names', '@nimbus/sdk/catalog', '@nimbus/sdk/servicebus', '@nimbus/sdk/topology', '@nimbus/sdk/testing']) { const m = await import(e); console.log(e, Object.keys(m).length); }",
      ],
      app,
    );
    assert.match(loaded, /@nimbus\/sdk\/contract\/names \d+/);
    assert.match(loaded, /@nimbus\/sdk\/testing \d+/);

    const emulator = await startEmulator();
    try {
      // NODE_TEST_CONTEXT would make the example's `node --test` think it runs inside this test and skip its files.
      const { NODE_TEST_CONTEXT: _ctx, ...parentEnv } = process.env;
      const env = { ...parentEnv, NIMBUS_SERVICEBUS_CONNECTION_STRING: emulator.connectionString };
      run(process.execPath, ['dist/src/provision.js'], app, env);
      const out = run(process.execPath, ['--test', '--test-reporter=spec', 'dist/test/'], app, env);
      assert.match(out, /pass 2/);
      assert.match(out, /fail 0/);
    } finally {
      emulator.child.kill('SIGTERM');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
