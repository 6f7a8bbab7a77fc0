// The demo's ledger import agent runs entirely through the Agent API: the ERP endpoint (an SDK host on the bus)
// hands invoices off; the agent - an AgentClient with a console URL and nothing else, no Service Bus client - finds
// them by long-polling /api/agent/receive over real HTTP (the console's real route handlers, sign-in off on
// loopback) and settles them through /api/agent/settle; the Resolver records the outcome. Embedded stack, no mocks.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createPublisher, sessionKeysFromCatalog } from '@nimbus/sdk';
import { ResolutionStatus } from '@nimbus/sdk/contract';
import { startConsoleTestStack, type ConsoleTestStack } from '../server/testing/stack.ts';
import { startRouteServer, type RouteServer } from '../server/testing/routeServer.ts';
import { queryAudit } from '../server/audit/auditLog.ts';
import { startResolver, type ResolverHandle } from '../resolver-worker/index.ts';
import { startDemo, type RunningDemo } from './index.ts';
import { DemoEndpoint, DemoEventType, ledgerJobOutcome } from './rules.ts';
import { endProcessAfterResults } from '../packages/sdk/e2e/harness.ts';

// What the Service Bus client leaves pending once the Resolver and the hosts are closed (a receiver still opening
// keeps a 60 s timer) held this process up for 60 s after its last result; harness.ts explains the exit.
endProcessAfterResults();

process.env.NIMBUS_LOG_LEVEL = 'silent';

let stack: ConsoleTestStack;
let server: RouteServer;
let resolver: ResolverHandle;
let demo: RunningDemo;
let closeContext: () => Promise<void>;
const silent = pino({ level: 'silent' });

before(async () => {
  stack = await startConsoleTestStack('ledgeragent');
  Object.assign(process.env, stack.env); // NIMBUS_AUTH=off: the console answers loopback callers only
  server = await startRouteServer();
  ({ closeContext } = await import('../server/context.ts'));
  resolver = startResolver({ client: stack.serviceBus.client, store: stack.store, log: silent });
  demo = await startDemo({
    client: stack.serviceBus.client,
    catalog: stack.catalog,
    ratePerSecond: 0,
    logger: silent,
    ledger: 'agentApi',
    timings: { handoffMinMs: 100, handoffMaxMs: 400, slowHandoffMs: 120_000, handoffExpectedMs: 60_000, sessionIdleTimeoutMs: 500 },
  });
  demo.connectLedgerAgent({ consoleUrl: server.url });
});

after(async () => {
  await demo?.stop();
  await resolver?.stop();
  await server?.close();
  await closeContext?.();
  await stack?.close();
});

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** An invoice id whose ledger import ends as `outcome` (the demo's rules decide by id). */
function invoiceWith(outcome: 'completes' | 'fails'): string {
  for (let i = 1; ; i++) if (ledgerJobOutcome(`INV-LA-${i}`) === outcome) return `INV-LA-${i}`;
}

test('the ledger agent settles the ERP handoffs through the Agent API: one import completes, one fails', async () => {
  const billing = createPublisher({ client: stack.serviceBus.client, endpointId: DemoEndpoint.billing, sessionKeys: sessionKeysFromCatalog(stack.catalog) });
  const ok = invoiceWith('completes');
  const bad = invoiceWith('fails');
  const published: Record<string, string> = {};
  try {
    for (const invoiceId of [ok, bad]) {
      const orderId = `ORD-${invoiceId}`;
      const p = await billing.publish(DemoEventType.InvoiceIssued, { invoiceId, orderId, customerId: 'C-LA', amount: 900, currency: 'EUR' });
      published[invoiceId] = p.messageId;
    }
  } finally {
    await billing.close();
  }
  const row = (status: ResolutionStatus) => async () => {
    const page = await stack.store.listEvents({ endpointId: DemoEndpoint.erp, statuses: [status], eventTypeId: DemoEventType.InvoiceIssued, pageSize: 50 });
    return page.items;
  };
  const completed = await eventually('the completed import', async () => (await row(ResolutionStatus.Completed)()).find((r) => r.sessionId === `ORD-${ok}`));
  const failed = await eventually('the failed import', async () => (await row(ResolutionStatus.Failed)()).find((r) => r.sessionId === `ORD-${bad}`));
  assert.match(failed.errorText ?? '', /accounting period is closed/);
  assert.equal(failed.errorType, 'LedgerPeriodClosed');
  // Both were settled by the agent's calls to the Agent API (with sign-in off the caller is the anonymous principal).
  const settles = await queryAudit(stack.store.database, { action: 'agent.settle', pageSize: 20 });
  const settledEvents = settles.items.filter((e) => e.outcome === 'succeeded').map((e) => e.eventId);
  assert.ok(settledEvents.includes(completed.eventId) && settledEvents.includes(failed.eventId), settledEvents.join(','));
  const receives = await queryAudit(stack.store.database, { action: 'agent.receive', pageSize: 50 });
  assert.ok(receives.items.some((e) => (e.details as { handedOut?: string } | null)?.handedOut === completed.eventId));
});
