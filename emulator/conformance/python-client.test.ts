// The emulator against a client stack that shares no code with @azure/service-bus or rhea: azure-servicebus
// for Python 7.x on uAMQP (the Azure uAMQP C library), Debian's python3-azure + python3-uamqp (.ci/run
// installs them). That client asks for SASL MSSBCBS, always uses TLS, sends $cbs/$management requests
// without reply-to and compares correlation-ids by AMQP type: each of those failed before this suite.
// The scenarios run in one Python process (python/servicebus_conformance.py) and report one JSON line each:
// first on topics and subscriptions, then the same ones on queues, then WebSockets, duplicate detection and a
// queue-level SAS policy.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startEmulator } from '../index.ts';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { generateKey } from '../auth/policies.ts';
import { tempDir } from './helpers.ts';

const SCRIPT = fileURLToPath(new URL('./python/servicebus_conformance.py', import.meta.url));

/** A Python that can import azure.servicebus and uamqp (pyenv shims may shadow Debian's /usr/bin/python3). */
function findPython(): string | undefined {
  for (const candidate of ['/usr/bin/python3', 'python3']) {
    try {
      execFileSync(candidate, ['-c', 'import azure.servicebus, uamqp'], { stdio: 'ignore', timeout: 30_000 });
      return candidate;
    } catch {
      // try the next one
    }
  }
  return undefined;
}

const python = findPython();
const skip = python
  ? false
  : 'python3-azure / python3-uamqp are not installed (apt-get install -y python3-azure python3-uamqp; .ci/run does)';

interface Result {
  scenario: string;
  ok: boolean;
  detail: string;
}

describe('azure-servicebus for Python (uAMQP) against the emulator', { skip }, () => {
  const scenarios: Array<[string, string]> = [
    [
      'settlement',
      'complete, abandon (redelivered with delivery count 1), defer + receive by sequence number, dead-letter with reason',
    ],
    ['receive-and-delete', 'receive-and-delete removes the message'],
    ['peek', 'peek in order, from a sequence number, without locking'],
    ['schedule', 'schedule and cancel: only the kept message arrives, when due'],
    [
      'sessions',
      'named and next-available sessions in order, session state, session lock renewal; from another connection, get/set state, renew and a deferred receive on the held session are refused (SessionLockLostError); a deferred session message taken back and completed by its own receiver',
    ],
    ['lock-renewal', 'renew_message_lock extends the message lock'],
    ['rules', 'a SQL filter on an application property routes only matching messages'],
    [
      'property-types',
      'application property types round-trip (int, long, float, str, bool, timestamp, binary)',
    ],
  ];
  // The same scenarios on queues (rules are a subscription's), and a queue's own Send policy.
  const queueScenarios: Array<[string, string]> = [
    ...scenarios
      .filter(([name]) => name !== 'rules')
      .map(([name, what]): [string, string] => [`queue-${name}`, what]),
    [
      'queue-websocket',
      'AMQP over WebSockets (TransportType.AmqpOverWebsocket): send, receive, complete, dead-letter, defer',
    ],
    [
      'queue-duplicates',
      'duplicate detection: a repeated MessageId (AMQPS, batch, WebSockets) is accepted and delivered once',
    ],
    [
      'queue-sas',
      "a queue's Send policy sends to that queue only, cannot receive from it, nor sign for another queue",
    ],
  ];
  const results = new Map<string, Result>();
  let stderr = '';
  let close: (() => Promise<void>) | undefined;

  before(async () => {
    const dir = await tempDir('python-client');
    const emulator = await startEmulator({ port: 0, tlsPort: 0, dataDir: dir.dir });
    close = async () => {
      await emulator.close();
      await dir.remove();
    };
    // One topic per scenario, so that one scenario's messages never reach another's subscriptions.
    const b = emulator.broker;
    for (const [scenario] of scenarios) {
      const topic = `py-${scenario}`;
      b.createTopic({ name: topic });
      b.createSubscription({ topicName: topic, subscriptionName: 'plain', lockDurationMs: 30_000 });
      b.createSubscription({ topicName: topic, subscriptionName: 'sessions', requiresSession: true });
      b.createSubscription({ topicName: topic, subscriptionName: 'dlq' });
      b.createSubscription({ topicName: topic, subscriptionName: 'scheduled' });
      b.createSubscription(
        { topicName: topic, subscriptionName: 'filtered' },
        { name: 'red', filter: { kind: 'sql', sqlExpression: "color = 'red'" } },
      );
    }
    // On queues, each of those subscriptions is a queue of its own, named after the scenario.
    for (const [scenario] of queueScenarios) {
      const prefix = `pyq-${scenario.replace(/^queue-/, '')}`;
      b.createQueue({
        name: `${prefix}-plain`,
        lockDurationMs: 30_000,
        requiresDuplicateDetection: scenario === 'queue-duplicates',
      });
      b.createQueue({ name: `${prefix}-sessions`, requiresSession: true });
      b.createQueue({ name: `${prefix}-dlq` });
      b.createQueue({ name: `${prefix}-scheduled` });
    }
    // The queue policy through the admin plane, as a user would make it.
    const queueSendKey = generateKey();
    const clients = createServiceBusClients(emulator.connectionString);
    try {
      const q = await clients.admin.getQueue('pyq-sas-plain');
      await clients.admin.updateQueue({
        ...q,
        authorizationRules: [
          {
            claimType: 'SharedAccessKey',
            keyName: 'send-only',
            accessRights: ['Send'],
            primaryKey: queueSendKey,
          },
        ],
      });
    } finally {
      await clients.close();
    }
    const output = await new Promise<string>((resolve, reject) => {
      execFile(
        python as string,
        [SCRIPT],
        {
          timeout: 480_000,
          env: {
            ...process.env,
            SB_CONNECTION_STRING: `Endpoint=sb://127.0.0.1;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${emulator.key}`,
            SB_TLS_PORT: String(emulator.tls?.port),
            SB_CA_FILE: emulator.tls?.certPath ?? '',
            SB_TOPIC_PREFIX: 'py',
            SB_QUEUE_PREFIX: 'pyq',
            SB_QUEUE_SEND_KEY: queueSendKey,
          },
        },
        (err, out, errOut) => {
          stderr = errOut;
          if (err && !out) reject(new Error(`python failed: ${err.message}\n${errOut.slice(-2000)}`));
          else resolve(out);
        },
      );
    });
    for (const line of output.split('\n')) {
      if (!line.startsWith('{')) continue;
      const r = JSON.parse(line) as Result;
      results.set(r.scenario, r);
    }
  });

  after(async () => {
    await close?.();
  });

  for (const [name, what] of [...scenarios, ...queueScenarios]) {
    it(`${name}: ${what}`, () => {
      const r = results.get(name);
      assert.ok(r, `scenario ${name} did not report; python stderr:\n${stderr.slice(-3000)}`);
      assert.ok(r.ok, r.detail);
    });
  }
});
