// startDemo(): the demo endpoints of catalog/demo.json on the SDK - billing, shipping, CRM and ERP subscriber
// hosts with their deferred processors, the ERP's external ledger jobs, and the storefront's traffic. Used by
// `npm start` (NIMBUS_DEMO=1) and by the tests.
import type { ServiceBusClient } from '@azure/service-bus';
import type { Logger } from 'pino';
import { pino } from 'pino';
import type { Catalog } from '@nimbus/sdk/contract';
import {
  createDeferredProcessor,
  createHandoffClient,
  createPublisher,
  createSubscriberHost,
  sessionKeysFromCatalog,
  type DeferredProcessor,
  type DeliveryResult,
  type InboxStore,
  type SubscriberHost,
} from '@nimbus/sdk';
import { demoEndpoints } from './endpoints.ts';
import { LedgerJobs } from './jobs.ts';
import { startLedgerAgent, type RunningLedgerAgent } from './ledgerAgent.ts';
import type { ConsoleToken } from '@nimbus/sdk';
import { DemoEndpoint, DemoEventType } from './rules.ts';
import { startTraffic, type RunningTraffic, type TrafficOptions } from './traffic.ts';

export { TrafficPlanner, type PlannedEvent, type Scenario } from './traffic.ts';
export { DemoEndpoint, DemoEventType } from './rules.ts';

export interface DemoTimings {
  /** Fixed delay of the CRM's retry policy. Default 3 s. */
  retryDelayMs: number;
  /** Ledger jobs finish within [min, max). Default 2-5 s. */
  handoffMinMs: number;
  handoffMaxMs: number;
  /** Slow ledger jobs finish after this long. Default 90 s. */
  slowHandoffMs: number;
  /** The handoff's expected-by, from the handoff. Default 30 s. */
  handoffExpectedMs: number;
  /** Sessions each host handles at once. Default 4. */
  maxConcurrentSessions: number;
  /** A host releases a session idle this long. Default 2 s (customers come and go). */
  sessionIdleTimeoutMs: number;
}

export const DEFAULT_DEMO_TIMINGS: DemoTimings = {
  retryDelayMs: 3000,
  handoffMinMs: 2000,
  handoffMaxMs: 5000,
  slowHandoffMs: 90_000,
  handoffExpectedMs: 30_000,
  maxConcurrentSessions: 4,
  sessionIdleTimeoutMs: 2000,
};

export interface DemoOptions {
  client: ServiceBusClient;
  /** Must contain the demo endpoints and event types (catalog/demo.json does). */
  catalog: Catalog;
  /** Seed of the traffic plan. Default 42. */
  seed?: number;
  /** Storefront events per second; 0 starts the endpoints without traffic. Default 2. */
  ratePerSecond?: number;
  /** Orders in the traffic's opening that wait for an operator (failed credit approvals, slow handoffs). Default 1. */
  operatorCases?: number;
  logger?: Logger;
  timings?: Partial<DemoTimings>;
  /**
   * A durable inbox for every demo host (idempotent consumers). Default none, as `npm start` runs. The chaos test
   * (e2e/chaos.test.ts) passes a Cosmos inbox reached through its fault proxy, so a store outage also reaches the
   * endpoints' deliveries, not only the Resolver.
   */
  inbox?: InboxStore;
  /** Storefront events to publish before the traffic stops (the endpoints keep handling). Default: no end. */
  eventLimit?: number;
  /** Told of every storefront event the broker accepted (see TrafficOptions.onPublished). */
  onPublished?: TrafficOptions['onPublished'];
  /**
   * `agentApi`: the ERP's ledger import agent runs on the console's Agent API (docs/agents.md) with no bus
   * credentials, once `connectLedgerAgent` names the console; `bus` (default): the ledger jobs report through the
   * SDK's bus handoff client, for runs without a console.
   */
  ledger?: 'bus' | 'agentApi';
}

export interface RunningDemo {
  /** Events the storefront published so far. */
  readonly published: number;
  /** Deliveries per endpoint and how they ended. */
  deliveries(): Record<string, Partial<Record<DeliveryResult, number>>>;
  /** With `ledger: 'agentApi'`: starts the ledger agent against the console (sign-in off: no token). */
  connectLedgerAgent(console: { consoleUrl: string; token?: ConsoleToken }): void;
  stop(): Promise<void>;
}

export class DemoCatalogError extends Error {
  override readonly name = 'DemoCatalogError';
}

const REQUIRED_CONSUMES: Record<string, string[]> = {
  [DemoEndpoint.billing]: [DemoEventType.OrderPlaced, DemoEventType.OrderCancelled],
  [DemoEndpoint.shipping]: [DemoEventType.OrderPlaced, DemoEventType.OrderCancelled],
  [DemoEndpoint.crm]: [
    DemoEventType.CustomerRegistered,
    DemoEventType.CustomerUpdated,
    DemoEventType.OrderPlaced,
  ],
  [DemoEndpoint.erp]: [
    DemoEventType.CustomerRegistered,
    DemoEventType.InvoiceIssued,
    DemoEventType.ShipmentDispatched,
  ],
};
const REQUIRED_PRODUCES: Record<string, string[]> = {
  [DemoEndpoint.storefront]: [
    DemoEventType.OrderPlaced,
    DemoEventType.OrderCancelled,
    DemoEventType.CustomerRegistered,
    DemoEventType.CustomerUpdated,
  ],
  [DemoEndpoint.billing]: [DemoEventType.InvoiceIssued],
  [DemoEndpoint.shipping]: [DemoEventType.ShipmentDispatched],
};

/** What the catalog lacks for the demo to run, or an empty list. */
export function demoCatalogProblems(catalog: Catalog): string[] {
  const problems: string[] = [];
  const byId = new Map(catalog.endpoints.map((e) => [e.id, e]));
  for (const [id, types] of Object.entries(REQUIRED_CONSUMES)) {
    const endpoint = byId.get(id);
    if (!endpoint) problems.push(`endpoint '${id}' is missing`);
    else
      for (const t of types)
        if (!endpoint.consumes.includes(t)) problems.push(`'${id}' does not consume ${t}`);
  }
  for (const [id, types] of Object.entries(REQUIRED_PRODUCES)) {
    const endpoint = byId.get(id);
    if (!endpoint) problems.push(`endpoint '${id}' is missing`);
    else
      for (const t of types)
        if (!endpoint.produces.includes(t)) problems.push(`'${id}' does not produce ${t}`);
  }
  return [...new Set(problems)];
}

export async function startDemo(options: DemoOptions): Promise<RunningDemo> {
  const problems = demoCatalogProblems(options.catalog);
  if (problems.length > 0)
    throw new DemoCatalogError(`the catalog does not fit the demo endpoints: ${problems.join('; ')}`);
  const timings = { ...DEFAULT_DEMO_TIMINGS, ...options.timings };
  const log = options.logger ?? pino({ level: 'silent' });
  const { client } = options;
  const sessionKeys = sessionKeysFromCatalog(options.catalog);

  const storefront = createPublisher({ client, endpointId: DemoEndpoint.storefront, sessionKeys });
  const billingPublisher = createPublisher({ client, endpointId: DemoEndpoint.billing, sessionKeys });
  const shippingPublisher = createPublisher({ client, endpointId: DemoEndpoint.shipping, sessionKeys });
  const viaAgentApi = options.ledger === 'agentApi';
  const ledgerTimings = { minMs: timings.handoffMinMs, maxMs: timings.handoffMaxMs, slowMs: timings.slowHandoffMs };
  const handoffClient = viaAgentApi ? undefined : createHandoffClient(client);
  const ledgerJobs = handoffClient ? new LedgerJobs(handoffClient, ledgerTimings, log.child({ endpointId: DemoEndpoint.erp })) : undefined;
  let ledgerAgent: RunningLedgerAgent | undefined;

  const counts: Record<string, Partial<Record<DeliveryResult, number>>> = {};
  const hosts: SubscriberHost[] = [];
  const processors: DeferredProcessor[] = [];
  for (const def of demoEndpoints({
    billingPublisher,
    shippingPublisher,
    ledgerJobs,
    retryDelayMs: timings.retryDelayMs,
    handoffExpectedMs: timings.handoffExpectedMs,
  })) {
    const perEndpoint: Partial<Record<DeliveryResult, number>> = (counts[def.endpointId] = {});
    const endpointLog = log.child({ endpointId: def.endpointId });
    hosts.push(
      createSubscriberHost({
        client,
        endpointId: def.endpointId,
        handlers: def.handlers,
        classifier: def.classifier,
        retryPolicies: def.retryPolicies,
        logger: endpointLog,
        maxConcurrentSessions: timings.maxConcurrentSessions,
        sessionIdleTimeoutMs: timings.sessionIdleTimeoutMs,
        inbox: options.inbox,
        // The demo runs its processors itself (below), with its own timings.
        deferredProcessor: false,
        onDelivery: (result) => {
          perEndpoint[result] = (perEndpoint[result] ?? 0) + 1;
        },
      }),
    );
    processors.push(
      createDeferredProcessor({
        client,
        endpointId: def.endpointId,
        logger: endpointLog,
        drainWaitMs: 500,
      }),
    );
  }
  for (const p of processors) p.start();
  await Promise.all(hosts.map((h) => h.start()));

  let traffic: RunningTraffic | undefined;
  const rate = options.ratePerSecond ?? 2;
  if (rate > 0)
    traffic = startTraffic({
      publisher: storefront,
      seed: options.seed ?? 42,
      ratePerSecond: rate,
      operatorCases: options.operatorCases,
      log: log.child({ endpointId: DemoEndpoint.storefront }),
      ...(options.onPublished ? { onPublished: options.onPublished } : {}),
      ...(options.eventLimit !== undefined ? { limit: options.eventLimit } : {}),
    });
  log.info(
    { endpoints: hosts.map((h) => h.endpointId), ratePerSecond: rate, seed: options.seed ?? 42 },
    'demo endpoints started',
  );

  let stopping: Promise<void> | undefined;
  return {
    get published() {
      return traffic?.published ?? 0;
    },
    deliveries: () => structuredClone(counts),
    connectLedgerAgent(console) {
      if (!viaAgentApi || ledgerAgent || stopping) return;
      ledgerAgent = startLedgerAgent({ ...console, timings: ledgerTimings, log: log.child({ endpointId: DemoEndpoint.erp, agent: 'ledger' }) });
    },
    stop() {
      // Traffic first, then the external jobs, then the hosts (in-flight deliveries settle), then the senders.
      stopping ??= (async () => {
        await traffic?.stop();
        await ledgerJobs?.stop();
        await ledgerAgent?.stop();
        await Promise.allSettled(hosts.map((h) => h.stop()));
        await Promise.allSettled(processors.map((p) => p.stop()));
        await Promise.allSettled([
          storefront.close(),
          billingPublisher.close(),
          shippingPublisher.close(),
          handoffClient?.close(),
        ]);
        log.info({ published: traffic?.published ?? 0 }, 'demo endpoints stopped');
      })();
      return stopping;
    },
  };
}
