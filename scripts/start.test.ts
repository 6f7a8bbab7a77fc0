// `npm start` with wrong settings: one clear sentence on stderr naming the setting, a non-zero exit code, no
// stack trace, no secret, and nothing left running. Runs scripts/start.ts as a child process, as npm does.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServiceBusBroker } from '../emulator/broker/index.ts';
import { journalFile } from '../emulator/broker/journal.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith('NIMBUS_') && k !== 'PORT' && k !== 'HOSTNAME') env[k] = v;
  // Ephemeral ports unless a case sets its own: nothing may depend on 5672/8081/3000 being free.
  return {
    ...env,
    NIMBUS_EMULATOR_PORT: '0',
    NIMBUS_COSMOS_PORT: '0',
    PORT: '0',
    NIMBUS_DEMO: '0',
    ...extra,
  };
}

function runStart(
  extra: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
      cwd: root,
      env: cleanEnv(extra),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

function assertOneClearLine(stderr: string, pattern: RegExp): void {
  const lines = stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `exactly one line on stderr, got:\n${stderr}`);
  assert.match(lines[0]!, /^npm start: /);
  assert.match(lines[0]!, pattern);
  assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
}

describe('npm start with wrong settings', () => {
  test('a malformed port names the variable and exits 2', async () => {
    const r = await runStart({ NIMBUS_EMULATOR_PORT: 'five' });
    assert.equal(r.code, 2);
    assertOneClearLine(r.stderr, /NIMBUS_EMULATOR_PORT must be a port number/);
    assert.equal(r.stdout, '', 'nothing started, nothing logged');
  });

  test('a broken connection string is refused without echoing its key', async () => {
    const r = await runStart({
      NIMBUS_SERVICEBUS_CONNECTION_STRING: 'Endpoint=;SharedAccessKeyName=root;SharedAccessKey=TOPSECRET123',
    });
    assert.equal(r.code, 2);
    assertOneClearLine(r.stderr, /NIMBUS_SERVICEBUS_CONNECTION_STRING/);
    assert.doesNotMatch(r.stderr + r.stdout, /TOPSECRET123/);
  });

  test('a Cosmos endpoint without a key asks for both', async () => {
    const r = await runStart({ NIMBUS_COSMOS_ENDPOINT: 'https://acct.documents.azure.com:443/' });
    assert.equal(r.code, 2);
    assertOneClearLine(r.stderr, /NIMBUS_COSMOS_KEY is not set/);
  });

  test('a port already in use names its variable', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    try {
      const port = (blocker.address() as AddressInfo).port;
      const r = await runStart({ NIMBUS_COSMOS_PORT: String(port) });
      assert.equal(r.code, 2);
      assertOneClearLine(
        r.stderr,
        new RegExp(`NIMBUS_COSMOS_PORT: 127\\.0\\.0\\.1:${port} is already in use`),
      );
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  test('a missing catalog file fails before anything listens, exit 1', async () => {
    const r = await runStart({ NIMBUS_CATALOG: 'catalog/does-not-exist.json' });
    assert.equal(r.code, 1);
    assertOneClearLine(r.stderr, /NIMBUS_CATALOG: catalog file not found: catalog\/does-not-exist\.json/);
    assert.doesNotMatch(r.stdout, /ready/, 'no server was started');
  });
});

describe('npm start with good settings', () => {
  test('starts the parts in order with prefixed logs, and SIGINT stops them in reverse with exit code 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'nimbus-start-'));
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
        cwd: root,
        // Headless (no console build needed), a little demo traffic, the emulator's data in a scratch folder.
        env: cleanEnv({
          NIMBUS_CONSOLE: '0',
          NIMBUS_DEMO: '1',
          NIMBUS_DEMO_RATE: '5',
          NIMBUS_DATA_DIR: dataDir,
        }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      await new Promise<void>((resolve, reject) => {
        child.stdout.setEncoding('utf8').on('data', (d: string) => {
          stdout += d;
          // Wait for some traffic, so that stopping has in-flight work to settle.
          if (/NimBus is running/.test(stdout) && /\[demo\] demo traffic running/.test(stdout)) resolve();
        });
        void exited.then((code) =>
          reject(new Error(`npm start exited early (${code}):\n${stdout}\n${stderr}`)),
        );
      });
      child.kill('SIGINT');
      assert.equal(await exited, 0, stderr);

      const prefixes = stdout
        .split('\n')
        .map((line) => /^\d\d:\d\d:\d\d \[(\w+)\]/.exec(line)?.[1])
        .filter((p): p is string => p !== undefined);
      const firstOf = (p: string) => prefixes.indexOf(p);
      const order = ['emulator', 'cosmos', 'provision', 'resolver', 'demo', 'console'].map(firstOf);
      assert.ok(
        order.every((i) => i >= 0),
        `every part logged:\n${stdout}`,
      );
      assert.deepEqual(
        [...order].sort((a, b) => a - b),
        order,
        `parts started in order:\n${stdout}`,
      );
      assert.ok(
        stdout.indexOf('demo endpoints stopped') < stdout.indexOf('Resolver: stopped'),
        'the demo stops before the resolver',
      );
      assert.match(stdout, /\[start\] stopped\n/);
      // The emulator's own log is on (see below), but a normal run, traffic and stop included, has nothing to say.
      assert.doesNotMatch(stdout, /\[emulator\] (WARN|ERROR)/, 'no emulator warnings in a normal run');
      assert.doesNotMatch(
        stdout + stderr,
        /SharedAccessKey=|AccountKey=/,
        'no connection string or key in the logs',
      );

      // The data is kept: a second start restores the store the first one wrote (the demo's rows, audits, ...).
      const again = await startAndStop(dataDir, []);
      assert.match(again, /documents restored from .*cosmos/);
      assert.doesNotMatch(again, /\[emulator\] (WARN|ERROR)/, 'no emulator warnings restoring its data');
      assert.doesNotMatch(again, /\b0 documents restored/);
      // --reset starts from a clean slate, and says so.
      const key = 'bG9jYWwtZGV2ZWxvcG1lbnQta2V5';
      const reset = await startAndStop(dataDir, ['--reset'], { NIMBUS_EMULATOR_KEY: key });
      // A chosen namespace key (for other tools) is used and never printed.
      assert.match(reset, /namespace key from NIMBUS_EMULATOR_KEY/);
      assert.ok(!reset.includes(key), 'the key is not in the log');
      assert.match(reset, /\[start\] reset: removed \S+servicebus and \S+cosmos; starting from a clean slate/);
      assert.match(reset, /\b0 documents restored/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("npm start shows the emulator's own problems", () => {
  test('a journal damaged in the middle is an [emulator] ERROR line naming the kept copy', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'nimbus-start-'));
    try {
      const busDir = join(dataDir, 'servicebus');
      await writeDamagedJournal(busDir);
      const stdout = await startAndStop(dataDir, []);
      const line = stdout.split('\n').find((l) => l.includes('journal is corrupt in the middle'));
      assert.ok(line, `the damage is in the start log:\n${stdout}`);
      assert.match(line, /^\d\d:\d\d:\d\d \[emulator\] ERROR broker: journal is corrupt in the middle; /);
      const kept = readdirSync(busDir).filter((f) => /^journal-\d+\.damaged-.+\.jsonl$/.test(f));
      assert.equal(kept.length, 1, `one kept copy: ${readdirSync(busDir).join(', ')}`);
      assert.ok(line.includes(` kept=${join(busDir, kept[0]!)}`), `the line names the kept copy: ${line}`);
      assert.match(line, / line=4 dropped=2\b/, 'and where the damage is, and how many lines were not replayed');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/**
 * A Service Bus data directory whose journal has a bad line between good ones (topic, subscription, message,
 * damage, message), as a broker that crashed leaves it: written by a real broker in a scratch directory, copied.
 */
async function writeDamagedJournal(busDir: string): Promise<void> {
  const scratch = mkdtempSync(join(tmpdir(), 'nimbus-journal-'));
  const broker = await createServiceBusBroker({ dataDir: scratch });
  try {
    broker.createTopic({ name: 't' });
    broker.createSubscription({ topicName: 't', subscriptionName: 's' });
    broker.send('t', [{ body: 'before', message_id: 'before' }]);
    broker.send('t', [{ body: 'after', message_id: 'after' }]);
    // Copied while the broker runs: its close() would compact the journal into a snapshot.
    mkdirSync(busDir, { recursive: true });
    for (const name of readdirSync(scratch)) copyFileSync(join(scratch, name), join(busDir, name));
  } finally {
    await broker.close();
    rmSync(scratch, { recursive: true, force: true });
  }
  const journal = readdirSync(busDir).find((f) => /^journal-\d+\.jsonl$/.test(f));
  assert.ok(journal, 'the broker wrote a journal');
  assert.equal(journal, journalFile(Number(/\d+/.exec(journal)![0])));
  const lines = readFileSync(join(busDir, journal), 'utf8').split('\n').filter((l) => l.length > 0);
  assert.equal(lines.length, 4, 'topic, subscription and two messages, one line each');
  lines.splice(3, 0, '[{"k":"put","t":"t"');
  writeFileSync(join(busDir, journal), lines.join('\n') + '\n');
}

/** Starts headless without demo traffic on `dataDir`, waits until it runs, stops it with SIGINT; its stdout. */
async function startAndStop(dataDir: string, args: string[], extraEnv: Record<string, string> = {}): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts', ...args], {
    cwd: root,
    env: cleanEnv({ NIMBUS_CONSOLE: '0', NIMBUS_DEMO: '0', NIMBUS_DATA_DIR: dataDir, ...extraEnv }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      if (/NimBus is running/.test(stdout)) resolve();
    });
    void exited.then((code) => reject(new Error(`npm start exited early (${code}):\n${stdout}\n${stderr}`)));
  });
  child.kill('SIGINT');
  assert.equal(await exited, 0, stderr);
  return stdout;
}
