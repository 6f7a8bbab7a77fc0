// What the Operations → Reconcile route handlers call: request schema and glue.
import { z } from 'zod';
import type { ConsoleContext } from '../context.ts';
import { applyReconcile, previewReconcile } from './reconcile.ts';

export const reconcileApplyBody = z
  .object({
    targets: z
      .array(
        z.object({
          endpointId: z.string().min(1).max(50),
          eventId: z.string().min(1).max(128),
          sessionId: z.string().max(128),
          rowMessageId: z.string().min(1).max(128),
        }),
      )
      .min(1)
      .max(500),
  })
  .strict();

export async function reconcilePreview(ctx: ConsoleContext) {
  return previewReconcile(ctx.store, ctx.catalog.endpoints.map((e) => e.id));
}

export async function reconcileApply(ctx: ConsoleContext, body: z.output<typeof reconcileApplyBody>, auditor: string) {
  return applyReconcile(ctx.store, body.targets, auditor);
}
