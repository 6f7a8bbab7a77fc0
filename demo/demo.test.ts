// The demo end to end: the embedded stack in-process (emulator, Cosmos server, provisioning, resolver worker,
// demo endpoints with traffic) on ephemeral ports, and what the Resolver recorded in the store: a row of every
// kind the console shows, each produced by the path the demo claims for it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { ResolutionStatus } from '@nimbus/sdk/contract';
import type { StatusRowSummary } from '../lib/store/index.ts';
import { parseStartConfig } from '../scripts/start-config.ts';
import { startStack, type RunningStack } from '../scripts/start-stack.ts';
import { Manager } from '../server/manager/manager.ts';
import { createServiceBusClients, type ServiceBusClients } from '@nimbus/sdk/servicebus';
import { DemoEndpoint, DemoEventType } from './index.ts';
import { endProcessAfterResults } from '../packages/sdk/e2e/harness.ts';

// What the Service Bus client leaves pending once the Resolver and the hosts are closed (a receiver still opening
// keeps a 60 s timer) held this process up for 92 s after its last result; harness.ts explains the exit.
endProcessAfterResults();

let stack: RunningStack;

before(async () => {
  const parsed = parseStartConfig({
    NIMBUS_EMULATOR_PORT: '0',
    NIMBUS_COSMOS_PORT: '0',
    PORT: '0',
    NIMBUS_DEMO_RATE: '8',
  });
  assert.ok(parsed.ok);
  const silent = pino({ level: 'silent' });
  stack = await startStack({
    // No data dir for either: the emulator and the Cosmos server keep this test's messages and rows in memory only.
    // The store used to persist to .nimbus/cosmos and grew with every run while the messages did not: the tests
    // picked rows of earlier runs (a credit hold whose parked siblings no longer exist on the fresh broker, so they
    // never completed) and every full-scan query of the embedded server got slower (90 s timeouts).
    config: {
      ...parsed.config,
      serviceBus: { kind: 'embedded', port: 0 },
      cosmos: { kind: 'embedded', port: 0 },
    },
    logger: () => silent,
    console: false,
    subscriptionDefaults: { lockDuration: 'PT5S', maxDeliveryCount: 10 },
    demoTimings: {
      retryDelayMs: 500,
      handoffMinMs: 500,
      handoffMaxMs: 1500,
      slowHandoffMs: 120_000,
      sessionIdleTimeoutMs: 500,
    },
  });
});

after(async () => {
  await stack?.stop();
});

/** Polls until `probe` returns a value; fails naming `what` after the deadline. */
async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 90_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function rows(
  endpointId: string,
  status: ResolutionStatus,
  extra: { handoffOnly?: boolean; eventTypeId?: string } = {},
): Promise<StatusRowSummary[]> {
  const page = await stack.store.listEvents({ endpointId, statuses: [status], pageSize: 100, ...extra });
  return page.items;
}

const firstRow = (
  endpointId: string,
  status: ResolutionStatus,
  extra: { handoffOnly?: boolean; eventTypeId?: string } = {},
  match: (r: StatusRowSummary) => boolean = () => true,
) =>
  eventually(
    `a ${status} row at ${endpointId}${extra.eventTypeId ? ` for ${extra.eventTypeId}` : ''}`,
    async () => (await rows(endpointId, status, extra)).find(match),
  );

describe('the demo traffic produces every kind of row', () => {
  test('Failed: billing refuses an invoice order above the credit limit and waits for an operator', async () => {
    const row = await firstRow(DemoEndpoint.billing, 'Failed', { eventTypeId: DemoEventType.OrderPlaced });
    assert.match(row.errorText ?? '', /exceeds the credit limit/);
    assert.equal(row.errorType, 'CreditApprovalRequiredError');
  });

  test('Deferred: a later event of the same customer is parked behind the failure', async () => {
    const failed = await firstRow(DemoEndpoint.billing, 'Failed', { eventTypeId: DemoEventType.OrderPlaced });
    const parked = await firstRow(
      DemoEndpoint.billing,
      'Deferred',
      {},
      (r) => r.sessionId === failed.sessionId,
    );
    assert.equal(parked.sessionId, failed.sessionId);
    const siblings = await stack.store.listParkedSiblings({
      endpointId: DemoEndpoint.billing,
      sessionId: failed.sessionId,
    });
    assert.ok(
      siblings.items.some((s) => s.eventId === parked.eventId),
      'the parked event is listed as a sibling of the failed one',
    );
  });

  test('DeadLettered: shipping rejects an order without a postal code', async () => {
    const row = await firstRow(DemoEndpoint.shipping, 'DeadLettered', {
      eventTypeId: DemoEventType.OrderPlaced,
    });
    assert.match(`${row.deadLetterErrorDescription ?? ''} ${row.errorText ?? ''}`, /postalCode/);
  });

  test('Unsupported: the CRM has no handler for CustomerUpdated', async () => {
    const row = await firstRow(DemoEndpoint.crm, 'Unsupported');
    assert.equal(row.eventTypeId, DemoEventType.CustomerUpdated);
  });

  test('Pending (Handoff): the ERP hands a large invoice to a ledger import job', async () => {
    const row = await firstRow(DemoEndpoint.erp, 'Pending', { handoffOnly: true });
    assert.equal(row.subStatus, 'Handoff');
    assert.equal(row.eventTypeId, DemoEventType.InvoiceIssued);
    assert.match(row.externalJobId ?? '', /^LEDGER-INV-/);
    assert.ok(row.expectedBy, 'the handoff carries its expected-by time');
  });

  test('Completed after a retry: the CRM throttles an order once and the retry policy recovers it', async () => {
    const details = await eventually('a CRM order completed by a RetryRequest', async () => {
      for (const row of await rows(DemoEndpoint.crm, 'Completed', {
        eventTypeId: DemoEventType.OrderPlaced,
      })) {
        const event = await stack.store.getEvent(DemoEndpoint.crm, row.eventId);
        const types = event?.history.items.map((h) => h.messageType) ?? [];
        if (types.includes('ErrorResponse') && types.includes('RetryRequest')) return types;
      }
      return undefined;
    });
    assert.ok(details.includes('ResolutionResponse'));
  });

  test('Completed after a handoff: the ledger job reports through the handoff client', async () => {
    const types = await eventually('an ERP invoice completed by HandoffCompletedRequest', async () => {
      for (const row of await rows(DemoEndpoint.erp, 'Completed', {
        eventTypeId: DemoEventType.InvoiceIssued,
      })) {
        const event = await stack.store.getEvent(DemoEndpoint.erp, row.eventId);
        const t = event?.history.items.map((h) => h.messageType) ?? [];
        if (t.includes('PendingHandoffResponse') && t.includes('HandoffCompletedRequest')) return t;
      }
      return undefined;
    });
    assert.ok(types.includes('ResolutionResponse'));
  });
});

describe('operator actions on the demo failures', () => {
  let clients: ServiceBusClients;
  let manager: Manager;
  before(() => {
    clients = createServiceBusClients(stack.serviceBusConnectionString);
    manager = new Manager({ store: stack.store, client: clients.client });
  });
  after(async () => {
    await manager?.close();
    await clients?.close();
  });

  const statusOf = async (endpointId: string, eventId: string) =>
    (await stack.store.getEvent(endpointId, eventId))?.rows[0];

  test('resubmitting the credit hold (the approval) completes it, then its parked siblings', async () => {
    const failed = await firstRow(DemoEndpoint.billing, 'Failed', { eventTypeId: DemoEventType.OrderPlaced });
    const parked = await firstRow(
      DemoEndpoint.billing,
      'Deferred',
      {},
      (r) => r.sessionId === failed.sessionId,
    );
    const result = await manager.execute(
      DemoEndpoint.billing,
      failed.eventId,
      { kind: 'resubmit' },
      'demo-test',
    );
    assert.equal(result.outcome, 'sent');
    await eventually('the resubmitted order to complete', async () =>
      (await statusOf(DemoEndpoint.billing, failed.eventId))?.status === 'Completed' ? true : undefined,
    );
    await eventually('the parked sibling to complete after it', async () =>
      (await statusOf(DemoEndpoint.billing, parked.eventId))?.status === 'Completed' ? true : undefined,
    );
  });

  test('resubmitting the dead-lettered order with its postal code added completes it', async () => {
    const dead = await firstRow(DemoEndpoint.shipping, 'DeadLettered', {
      eventTypeId: DemoEventType.OrderPlaced,
    });
    const row = await statusOf(DemoEndpoint.shipping, dead.eventId);
    const payload = row?.payload as { shippingAddress: Record<string, string> } & Record<string, unknown>;
    assert.equal(payload.shippingAddress.postalCode, undefined, 'the stored payload is the malformed one');
    const edited = { ...payload, shippingAddress: { ...payload.shippingAddress, postalCode: '1620' } };
    await manager.execute(
      DemoEndpoint.shipping,
      dead.eventId,
      { kind: 'resubmit', edited: { payload: edited } },
      'demo-test',
    );
    await eventually('the edited resubmission to complete', async () =>
      (await statusOf(DemoEndpoint.shipping, dead.eventId))?.status === 'Completed' ? true : undefined,
    );
  });
});
