// The demo endpoints' handlers, written on the SDK as an adapter author would: typed handlers with payload
// schemas, a retry policy for a throttling dependency, the default permanent-failure classifier, and a handoff
// to an external job. What each one does with which data is in rules.ts.
import { z } from 'zod';
import { MessageType } from '@nimbus/sdk/contract';
import {
  HandlerRegistry,
  RetryPolicies,
  defaultPermanentFailureClassifier,
  type FailureDispositionClassifier,
  type Publisher,
} from '@nimbus/sdk';
import { CreditApprovalRequiredError, CrmUnavailableError } from './errors.ts';
import type { LedgerJobs } from './jobs.ts';
import { bucketOf } from './random.ts';
import {
  CREDIT_LIMIT,
  DemoEndpoint,
  DemoEventType,
  LEDGER_IMPORT_THRESHOLD,
  crmThrottles,
  invoiceIdFor,
  ledgerJobOutcome,
  needsCreditApproval,
  shipmentIdFor,
} from './rules.ts';

export interface DemoEndpointDefinition {
  endpointId: string;
  handlers: HandlerRegistry;
  retryPolicies?: RetryPolicies;
  classifier: FailureDispositionClassifier;
}

export interface DemoEndpointDeps {
  /** Publishers of the endpoints that publish from their handlers. */
  billingPublisher: Publisher;
  shippingPublisher: Publisher;
  /** The bus-side ledger jobs; absent when the ledger agent runs on the Agent API (it finds the handoffs itself). */
  ledgerJobs?: LedgerJobs;
  /** The CRM retry policy's fixed delay. */
  retryDelayMs: number;
  /** How long after the handoff the ERP expects its ledger job to finish. */
  handoffExpectedMs: number;
}

// Billing reads only what it bills; extra fields pass.
const billingOrderSchema = z.object({
  orderId: z.string().min(1),
  customerId: z.string().min(1),
  total: z.number().nonnegative(),
  currency: z.string().length(3),
  paymentMethod: z.string().optional(),
});

// Shipping needs a complete address: an order without one is malformed for it (dead-lettered, not retried).
const shippingOrderSchema = z.object({
  orderId: z.string().min(1),
  customerId: z.string().min(1),
  shippingAddress: z.object({
    street: z.string().min(1),
    postalCode: z.string().min(1),
    city: z.string().min(1),
    country: z.string().length(2),
  }),
});

const cancellationSchema = z.object({ orderId: z.string().min(1), customerId: z.string().min(1).optional() });
const customerSchema = z.object({ customerId: z.string().min(1) });
const invoiceSchema = z.object({
  invoiceId: z.string().min(1),
  orderId: z.string().min(1),
  customerId: z.string().min(1),
  amount: z.number().nonnegative(),
  currency: z.string().length(3),
});
const shipmentSchema = z.object({ shipmentId: z.string().min(1), orderId: z.string().min(1) });

const CARRIERS: Record<string, string> = {
  DK: 'PostNord',
  SE: 'PostNord',
  NO: 'Bring',
  DE: 'DHL',
  NL: 'PostNL',
};

const done = (): void => undefined;

export function demoEndpoints(deps: DemoEndpointDeps): DemoEndpointDefinition[] {
  const classifier = defaultPermanentFailureClassifier();

  const billing = new HandlerRegistry()
    .on(
      DemoEventType.OrderPlaced,
      async (order, ctx) => {
        // An operator's resubmission is the manual credit approval (or carries an edited payment method).
        if (needsCreditApproval(order) && ctx.messageType !== MessageType.ResubmissionRequest) {
          throw new CreditApprovalRequiredError(
            `Order ${order.orderId}: invoice total ${order.total.toFixed(2)} ${order.currency} exceeds the credit limit of ${CREDIT_LIMIT.toFixed(2)} for ${order.customerId}; approve the credit and resubmit`,
          );
        }
        await deps.billingPublisher.publish(
          DemoEventType.InvoiceIssued,
          {
            invoiceId: invoiceIdFor(order.orderId),
            orderId: order.orderId,
            customerId: order.customerId,
            amount: order.total,
            currency: order.currency,
            paymentMethod: order.paymentMethod ?? 'card',
          },
          { sessionId: order.customerId, correlationId: ctx.correlationId },
        );
      },
      { schema: billingOrderSchema },
    )
    .on(DemoEventType.OrderCancelled, done, { schema: cancellationSchema });

  const shipping = new HandlerRegistry()
    .on(
      DemoEventType.OrderPlaced,
      async (order, ctx) => {
        const shipmentId = shipmentIdFor(order.orderId);
        await deps.shippingPublisher.publish(
          DemoEventType.ShipmentDispatched,
          {
            shipmentId,
            orderId: order.orderId,
            customerId: order.customerId,
            carrier: CARRIERS[order.shippingAddress.country] ?? 'DHL',
            trackingNumber: `00370${String(bucketOf(shipmentId, 1e9)).padStart(15, '0')}`,
          },
          { sessionId: order.customerId, correlationId: ctx.correlationId },
        );
      },
      { schema: shippingOrderSchema },
    )
    .on(DemoEventType.OrderCancelled, done, { schema: cancellationSchema });

  // The CRM adapter has not implemented CustomerUpdated: those events are recorded Unsupported.
  const crm = new HandlerRegistry().on(DemoEventType.CustomerRegistered, done, { schema: customerSchema }).on(
    DemoEventType.OrderPlaced,
    (order, ctx) => {
      if (ctx.retryCount === 0 && crmThrottles(order.orderId)) {
        throw new CrmUnavailableError(
          `CRM API answered 503 Service Unavailable (rate limit) while adding order ${order.orderId}`,
        );
      }
    },
    { schema: billingOrderSchema.pick({ orderId: true, customerId: true }) },
  );
  const crmRetries = new RetryPolicies().addExceptionRule(CrmUnavailableError, {
    maxRetries: 3,
    strategy: 'Fixed',
    baseDelayMs: deps.retryDelayMs,
  });

  const erp = new HandlerRegistry()
    .on(DemoEventType.CustomerRegistered, done, { schema: customerSchema })
    .on(DemoEventType.ShipmentDispatched, done, { schema: shipmentSchema })
    .on(
      DemoEventType.InvoiceIssued,
      (invoice, ctx) => {
        // A resubmission is an operator re-running the import by hand: it completes at once.
        if (invoice.amount < LEDGER_IMPORT_THRESHOLD || ctx.messageType === MessageType.ResubmissionRequest)
          return;
        if (!ctx.eventId || !ctx.sessionId)
          throw new Error(`invoice ${invoice.invoiceId} arrived without EventId or SessionId`);
        const jobId = `LEDGER-${invoice.invoiceId}`;
        ctx.markPendingHandoff(
          `Ledger import of ${invoice.invoiceId} (${invoice.amount.toFixed(2)} ${invoice.currency}) queued`,
          jobId,
          deps.handoffExpectedMs,
        );
        deps.ledgerJobs?.start(
          jobId,
          {
            endpointId: DemoEndpoint.erp,
            eventId: ctx.eventId,
            sessionId: ctx.sessionId,
            messageId: ctx.messageId,
            eventTypeId: ctx.eventTypeId,
            correlationId: ctx.correlationId,
            originatingMessageId: ctx.originatingMessageId,
          },
          ledgerJobOutcome(invoice.invoiceId),
          bucketOf(`delay:${invoice.invoiceId}`, 1000) / 1000,
        );
      },
      { schema: invoiceSchema },
    );

  return [
    { endpointId: DemoEndpoint.billing, handlers: billing, classifier },
    { endpointId: DemoEndpoint.shipping, handlers: shipping, classifier },
    { endpointId: DemoEndpoint.crm, handlers: crm, retryPolicies: crmRetries, classifier },
    { endpointId: DemoEndpoint.erp, handlers: erp, classifier },
  ];
}
