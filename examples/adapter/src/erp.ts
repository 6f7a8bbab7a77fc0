// The subscriber's handling rules for the ERP endpoint: what to do with an OrderPlaced, which failures are worth a
// retry, and when the work continues in the ERP as a job (a pending handoff). Kept apart from the process setup
// (subscriber.ts) so the test runs exactly these handlers.
import { HandlerRegistry, RetryPolicies } from '@nimbus/sdk';
import { z } from 'zod';

export const OrderPlaced = z.object({
  orderId: z.string().min(1),
  total: z.number().nonnegative(),
  lines: z.number().int().positive(),
});
export type OrderPlaced = z.infer<typeof OrderPlaced>;

/** The ERP is down or overloaded: worth retrying later. */
export class ErpUnavailableError extends Error {
  override name = 'ErpUnavailableError';
}

/** What the handlers need of the ERP: small orders import at once, large ones are queued as an import job. */
export interface Erp {
  importOrder(order: OrderPlaced, signal: AbortSignal): Promise<{ kind: 'imported' } | { kind: 'queued'; jobId: string }>;
}

export function erpHandlers(erp: Erp): HandlerRegistry {
  return new HandlerRegistry().on(
    'OrderPlaced',
    async (order, ctx) => {
      const result = await erp.importOrder(order, ctx.signal);
      // The ERP finishes queued imports on its own; the session waits (later orders of the same customer stay in
      // order behind it) until the job's outcome is reported through the handoff client.
      if (result.kind === 'queued') ctx.markPendingHandoff('ERP import job', result.jobId, 30 * 60_000);
    },
    { schema: OrderPlaced },
  );
}

/** ERP outages are retried: 10 s, 20 s, 40 s … at most 5 min apart, 5 times; then the session stays blocked. */
export const erpRetryPolicies = new RetryPolicies().addExceptionRule(ErpUnavailableError, {
  maxRetries: 5,
  strategy: 'Exponential',
  baseDelayMs: 10_000,
  maxDelayMs: 5 * 60_000,
});
