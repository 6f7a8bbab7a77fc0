// AMQPS with a certificate the user gives (`--cert` / `--key-file`), not the generated one: the CLI serves
// exactly that certificate, prints its real SHA-256 fingerprint, generates nothing into the data directory,
// and an unmodified @azure/service-bus client (no UseDevelopmentEmulator, so TLS as against Azure) connects
// through it when it trusts the certificate, the way a user would: NODE_EXTRA_CA_CERTS. The client runs in a
// child process because Node reads that variable at start-up only. The test makes its own certificate with
// the openssl command line (RSA, unlike the generated EC one), so nothing here comes from the emulator.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { CERT_FILE } from './tls-certificate.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = fileURLToPath(new URL('./cli.ts', import.meta.url));

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

interface Printed {
  connectionString: string;
  tlsPort: number;
  certPath: string;
  fingerprint: string;
}

/** Starts the CLI and reads what it prints up to its ready line. */
function startCli(args: string[]): Promise<{ child: ChildProcess; printed: Printed }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`the CLI did not get ready:\n${out}\n${err}`)), 60_000);
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const onEarlyExit = (code: number | null): void => {
      clearTimeout(timer);
      reject(new Error(`the CLI exited with ${code}:\n${out}\n${err}`));
    };
    child.once('exit', onEarlyExit);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (!/emulator ready on /.test(out)) return;
      clearTimeout(timer);
      child.removeListener('exit', onEarlyExit);
      const tlsLine = /AMQPS on [^:]+:(\d+), certificate (.+) \(SHA-256 ([0-9A-F:]+)\)/.exec(out);
      const cs = /^(Endpoint=sb:\/\/\S+)$/m.exec(out);
      if (!tlsLine || !cs) {
        reject(new Error(`unexpected CLI output:\n${out}`));
        return;
      }
      resolve({
        child,
        printed: {
          connectionString: cs[1]!,
          tlsPort: Number(tlsLine[1]),
          certPath: tlsLine[2]!,
          fingerprint: tlsLine[3]!,
        },
      });
    });
  });
}

/** Runs an ES module script in a fresh Node (repository cwd, so packages resolve) and returns its stdout. */
function runNode(script: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = []): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [...nodeArgs, '--input-type=module', '-e', script],
      { cwd: ROOT, env: { ...process.env, ...env }, timeout: 90_000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${err.message}\n${stdout}\n${stderr.slice(-3000)}`));
        else resolve(stdout);
      },
    );
  });
}

describe(
  'AMQPS with a given certificate (--cert / --key-file)',
  { skip: !hasOpenssl() && 'no openssl' },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'nimbus-given-cert-'));
    const certPath = join(dir, 'given-cert.pem');
    const keyPath = join(dir, 'given-key.pem');
    const dataDir = join(dir, 'data');
    let expectedFingerprint = '';
    let child: ChildProcess | undefined;
    let printed: Printed;

    before(async () => {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          keyPath,
          '-out',
          certPath,
          '-days',
          '2',
          '-subj',
          '/CN=localhost',
          '-addext',
          'subjectAltName=DNS:localhost,IP:127.0.0.1',
        ],
        { stdio: 'ignore' },
      );
      // "sha256 Fingerprint=AB:CD:…" (the label's case differs between openssl versions).
      const line = execFileSync('openssl', ['x509', '-noout', '-fingerprint', '-sha256', '-in', certPath], {
        encoding: 'utf8',
      });
      expectedFingerprint = line.trim().split('=')[1]!.toUpperCase();
      const started = await startCli([
        '--port',
        '0',
        '--tls-port',
        '0',
        '--cert',
        certPath,
        '--key-file',
        keyPath,
        '--data-dir',
        dataDir,
      ]);
      child = started.child;
      printed = started.printed;
    });

    after(async () => {
      if (child && child.exitCode === null) {
        const exited = new Promise((resolve) => child!.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    });

    test('prints the given certificate and its real fingerprint, and generates none', () => {
      assert.match(expectedFingerprint, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
      assert.equal(printed.certPath, certPath);
      assert.equal(printed.fingerprint, expectedFingerprint);
      assert.equal(existsSync(join(dataDir, CERT_FILE)), false, 'no certificate generated into the data dir');
    });

    test('the TLS listener presents that certificate; a client that does not trust it is refused', async () => {
      const presented = await new Promise<string>((resolve, reject) => {
        const socket = tls.connect(
          { host: '127.0.0.1', port: printed.tlsPort, servername: 'localhost', ca: readFileSync(certPath) },
          () => {
            const fp = socket.getPeerCertificate().fingerprint256;
            socket.end();
            resolve(fp);
          },
        );
        socket.once('error', reject);
      });
      assert.equal(presented, expectedFingerprint);
      await assert.rejects(
        new Promise<void>((resolve, reject) => {
          const socket = tls.connect(
            { host: '127.0.0.1', port: printed.tlsPort, servername: 'localhost' },
            () => {
              socket.end();
              resolve();
            },
          );
          socket.once('error', reject);
        }),
        /self[- ]signed/i,
      );
    });

    test('@azure/service-bus over TLS (as against Azure) manages, sends and receives when it trusts the certificate', async () => {
      // The namespace key from the printed connection string; the endpoint is the TLS port, without
      // UseDevelopmentEmulator: AMQPS for the data plane, HTTPS (no rewriting) for the admin client.
      const key = /SharedAccessKey=([^;]+)/.exec(printed.connectionString)![1]!;
      const connectionString = `Endpoint=sb://localhost:${printed.tlsPort};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${key}`;
      const out = await runNode(
        `
      import { ServiceBusClient, ServiceBusAdministrationClient } from '@azure/service-bus';
      const cs = process.env.SB_CS;
      const admin = new ServiceBusAdministrationClient(cs, { retryOptions: { maxRetries: 0 } });
      await admin.createQueue('over-tls');
      const client = new ServiceBusClient(cs, { retryOptions: { maxRetries: 0, timeoutInMs: 20000 } });
      await client.createSender('over-tls').sendMessages({ body: 'secure', messageId: 'tls-1' });
      const receiver = client.createReceiver('over-tls');
      const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10000 });
      await receiver.completeMessage(m);
      const runtime = await admin.getQueueRuntimeProperties('over-tls');
      console.log(JSON.stringify({ id: m.messageId, body: m.body, left: runtime.totalMessageCount }));
      await client.close();
      `,
        { SB_CS: connectionString, NODE_EXTRA_CA_CERTS: certPath },
      );
      assert.deepEqual(JSON.parse(out.trim().split('\n').pop()!), { id: 'tls-1', body: 'secure', left: 0 });
    });
  },
);
