// What the Operations → Reconcile route handlers call: request schema and glue.
import { z } from 'zod';
import type { ConsoleContext } from '../context.ts';
import { applyReconcile, previewReconcile } from './reconcile.ts';
import { applyStuckRepairs } from './stuck.ts';

const rowTarget = {
  endpointId: z.string().min(1).max(50),
  eventId: z.string().min(1).max(128),
  sessionId: z.string().max(128),
  rowMessageId: z.string().min(1).max(128),
};

export const reconcileApplyBody = z
  .object({
    /** Stale Pending rows: re-apply the stored response. */
    targets: z.array(z.object(rowTarget).strict()).max(500).default([]),
    /** Stuck rows: re-send the command or restore the row (./stuck.ts). */
    repairs: z
      .array(z.object({ ...rowTarget, kind: z.enum(['claim', 'unanswered']), action: z.enum(['resend', 'restore']) }).strict())
      .max(500)
      .default([]),
  })
  .strict()
  .refine((b) => b.targets.length + b.repairs.length > 0, 'name at least one row: targets (stale rows) or repairs (stuck rows)');

/** Every endpoint a request touches: each must be allowed (route handler). */
export function reconcileEndpoints(body: z.output<typeof reconcileApplyBody>): string[] {
  return [...new Set([...body.targets, ...body.repairs].map((t) => t.endpointId))];
}

export async function reconcilePreview(ctx: ConsoleContext) {
  return previewReconcile(ctx.store, ctx.catalog.endpoints.map((e) => e.id));
}

export async function reconcileApply(ctx: ConsoleContext, body: z.output<typeof reconcileApplyBody>, auditor: string) {
  const stale = body.targets.length > 0 ? await applyReconcile(ctx.store, body.targets, auditor) : { repaired: 0, unchanged: 0, results: [] };
  const repairs = await applyStuckRepairs({ store: ctx.store, manager: ctx.manager }, body.repairs, auditor, { now: new Date() });
  const repaired = repairs.filter((r) => r.outcome === 'repaired').length;
  return {
    repaired: stale.repaired + repaired,
    unchanged: stale.unchanged + repairs.length - repaired,
    results: stale.results,
    repairs,
  };
}
