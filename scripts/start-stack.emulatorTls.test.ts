// `npm start` with NIMBUS_EMULATOR_TLS_PORT: its emulator gets an AMQPS listener, and its console is told the port
// that listener really got (asked for 0 here: any free port), which is what the alert targets refuse
// (server/alerts/channelTarget.ts). The console is a stand-in module in a temporary root that records the settings
// it was handed: the real console would need a `next build`; the emulator, Cosmos server and resolver are real.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseStartConfig } from './start-config.ts';
import { startStack, type RunningStack } from './start-stack.ts';
import { hostProblem, OWN_SERVER_REFUSAL } from '../server/alerts/channelTarget.ts';

const root = mkdtempSync(join(tmpdir(), 'nimbus-stack-root-'));
let stack: RunningStack | undefined;
after(async () => {
  await stack?.stop();
  rmSync(root, { recursive: true, force: true });
});

test("npm start hands its console the AMQPS port its emulator listens on, and the alert targets refuse that port", async () => {
  mkdirSync(join(root, 'server'));
  // Records the console's settings where this test reads them; answers as a started console does.
  writeFileSync(
    join(root, 'server', 'console.ts'),
    `export async function startConsole(o) {
       globalThis.nimbusConsoleEnv = o.env;
       return { url: 'http://127.0.0.1:9/', close: async () => {} };
     }\n`,
  );
  const parsed = parseStartConfig({
    NIMBUS_EMULATOR_PORT: '0',
    NIMBUS_COSMOS_PORT: '0',
    PORT: '0',
    NIMBUS_EMULATOR_TLS_PORT: '0',
    NIMBUS_DEMO: '0',
    NIMBUS_CONSOLE_DEV: '1', // no `next build` of the stand-in root
  });
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
  assert.equal(parsed.config.serviceBus.kind, 'embedded');
  const silent = pino({ level: 'silent' });
  stack = await startStack({
    // Memory only: no data folder for either server (not the default .nimbus).
    config: {
      ...parsed.config,
      serviceBus: { kind: 'embedded', port: 0, tlsPort: 0 },
      cosmos: { kind: 'embedded', port: 0 },
    },
    logger: () => silent,
    root,
  });
  const env = (globalThis as { nimbusConsoleEnv?: Record<string, string> }).nimbusConsoleEnv;
  assert.ok(env, 'the stand-in console was started');
  const tlsPort = Number(env.NIMBUS_EMULATOR_TLS_PORT);
  assert.ok(Number.isInteger(tlsPort) && tlsPort > 0, `a real port, not the 0 asked for: ${env.NIMBUS_EMULATOR_TLS_PORT}`);
  // The emulator listens there.
  await new Promise<void>((resolve, reject) => {
    const socket = connect(tlsPort, '127.0.0.1', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
  assert.equal(hostProblem('127.0.0.1', tlsPort, env), OWN_SERVER_REFUSAL);
});
