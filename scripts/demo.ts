// `npm run demo`: the demo endpoints (billing, shipping, CRM, ERP hosts with their deferred processors and the
// ERP's ledger jobs) and the storefront's traffic, on their own, against whatever Service Bus namespace
// NIMBUS_SERVICEBUS_CONNECTION_STRING (or NIMBUS_SERVICEBUS_NAMESPACE) names (the emulator of `npm run emulator`, or Azure). The topology must be
// provisioned already (`npm run provision`, or a running `npm start`). The demo's knobs are `npm start`'s:
// NIMBUS_CATALOG, NIMBUS_DEMO_RATE, NIMBUS_DEMO_SEED, NIMBUS_DEMO_OPERATOR_CASES, NIMBUS_DEMO_SLOW_HANDOFF_SECONDS,
// NIMBUS_LOG_LEVEL. NIMBUS_DEMO_PUBLISHED_LOG=FILE appends one JSON line per event the broker accepted
// ({ messageId, sessionId, eventTypeId, scenario, producer }), so a test can tell what was really published;
// NIMBUS_DEMO_EVENTS=N stops the traffic after N events while the endpoints go on handling.
import { appendFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pino } from 'pino';
import { CatalogError, loadCatalog } from '@nimbus/sdk/catalog';
import { createServiceBusClients, serviceBusConnectionFromEnv } from '@nimbus/sdk/servicebus';
import { startTelemetry } from '../lib/telemetry/start.ts';
import { DemoCatalogError, DemoEndpoint, startDemo } from '../demo/index.ts';
import { parseStartConfig } from './start-config.ts';

function fail(message: string, code: number): never {
  process.stderr.write(`demo: ${message}\n`);
  process.exit(code);
}

// The demo's settings are validated as `npm start` validates them; the console's (PORT, HOSTNAME) do not apply.
const { PORT: _port, HOSTNAME: _host, NIMBUS_SERVICEBUS_NAMESPACE: _namespace, ...env } = process.env;
// The namespace: a connection string (SAS) or NIMBUS_SERVICEBUS_NAMESPACE (Microsoft Entra identity).
const bus = serviceBusConnectionFromEnv(process.env);
if (!bus.ok) fail(`${bus.problems.join('; ')} (\`npm run emulator\` prints a connection string)`, 2);
const parsed = parseStartConfig(env);
if (!parsed.ok) fail(parsed.message, 2);
const config = parsed.config;
const publishedLog = process.env.NIMBUS_DEMO_PUBLISHED_LOG?.trim() || undefined;
const limitText = process.env.NIMBUS_DEMO_EVENTS?.trim();
const eventLimit = limitText ? Number(limitText) : undefined;
if (eventLimit !== undefined && (!Number.isInteger(eventLimit) || eventLimit < 0))
  fail('NIMBUS_DEMO_EVENTS must be a whole number of events (0 or more)', 2);

let catalog;
try {
  catalog = await loadCatalog(resolve(config.catalogPath));
} catch (err) {
  if (err instanceof CatalogError) fail(`NIMBUS_CATALOG: ${err.message}`, 2);
  throw err;
}
const log = pino({ name: 'demo', level: config.logLevel });
await startTelemetry('nimbus-demo');
const clients = createServiceBusClients(bus.connection);
let demo;
try {
  demo = await startDemo({
    client: clients.client,
    catalog,
    seed: config.demo.seed,
    ratePerSecond: config.demo.ratePerSecond,
    operatorCases: config.demo.operatorCases,
    logger: log,
    timings: { slowHandoffMs: config.demo.slowHandoffMs },
    ...(eventLimit !== undefined ? { eventLimit } : {}),
    ...(publishedLog
      ? {
          // Appended synchronously: a line is on disk before the next event is published, even if killed.
          onPublished: (e) =>
            appendFileSync(publishedLog, `${JSON.stringify({ ...e, producer: DemoEndpoint.storefront })}\n`),
        }
      : {}),
  });
} catch (err) {
  await clients.close().catch(() => undefined);
  if (err instanceof DemoCatalogError) fail(err.message, 2);
  fail(`the demo did not start: ${(err as Error).message}`, 1);
}
console.log(`demo ready: ${config.demo.ratePerSecond} events/s, seed ${config.demo.seed}`);

let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`demo stopping (${signal}); ${demo.published} events published`);
  void (async () => {
    await demo.stop();
    await clients.close();
    process.exit(0);
  })().catch(() => process.exit(1));
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
