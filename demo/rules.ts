// The demo's business rules, shared by the traffic planner (which needs to know what an event will do, to open
// with one event of every kind) and the handlers (which act on them). Every rule reads the payload or a stable
// bucket of an identifier, never a delivery-specific value, so an event behaves the same wherever it is handled.
import { bucketOf } from './random.ts';

export const DemoEndpoint = {
  storefront: 'storefrontendpoint',
  billing: 'billingendpoint',
  shipping: 'shippingendpoint',
  crm: 'crmendpoint',
  erp: 'erpendpoint',
} as const;

export const DemoEventType = {
  OrderPlaced: 'OrderPlaced',
  OrderCancelled: 'OrderCancelled',
  CustomerRegistered: 'CustomerRegistered',
  CustomerUpdated: 'CustomerUpdated',
  InvoiceIssued: 'InvoiceIssued',
  ShipmentDispatched: 'ShipmentDispatched',
} as const;

/** Billing: orders paid by invoice above this total need a manual credit approval (an operator resubmits). */
export const CREDIT_LIMIT = 500;

/** ERP: invoices from this amount are imported into the ledger by a long-running external job (a handoff). */
export const LEDGER_IMPORT_THRESHOLD = 250;

/** CRM: its API throttles one order in eight on the first attempt; the retry policy recovers it. */
export function crmThrottles(orderId: string): boolean {
  return bucketOf(`crm:${orderId}`, 8) === 0;
}

export type LedgerJobOutcome = 'completes' | 'fails' | 'slow';

/**
 * ERP ledger import: most complete within seconds; one in twelve fails (the customer's ERP session then waits for
 * an operator) and one in twelve runs past its expected time.
 */
export function ledgerJobOutcome(invoiceId: string): LedgerJobOutcome {
  const b = bucketOf(`ledger:${invoiceId}`, 12);
  if (b === 0) return 'fails';
  if (b === 1) return 'slow';
  return 'completes';
}

export function invoiceIdFor(orderId: string): string {
  return `INV-${orderId.replace(/^ORD-/, '')}`;
}

export function shipmentIdFor(orderId: string): string {
  return `SHP-${orderId.replace(/^ORD-/, '')}`;
}

export function needsCreditApproval(order: { paymentMethod?: string; total: number }): boolean {
  return order.paymentMethod === 'invoice' && order.total > CREDIT_LIMIT;
}
