// What the Admin → Health route handlers call: request schemas and glue.
import { z } from 'zod';
import type { ConsoleContext } from '../context.ts';
import { notFound } from '../http.ts';
import { getOpsServices } from './services.ts';

export const heartbeatSettingsBody = z
  .object({
    enabled: z.boolean().optional(),
    intervalSeconds: z.number().int().min(1).max(86_400).optional(),
    timeoutSeconds: z.number().int().min(1).max(86_400).optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'nothing to change');

export const endpointInclusionBody = z.object({ included: z.boolean() }).strict();

export const healthOverview = (ctx: ConsoleContext) => getOpsServices(ctx).heartbeat.overview();

export const updateHeartbeatSettings = (ctx: ConsoleContext, body: z.output<typeof heartbeatSettingsBody>, auditor: string) =>
  getOpsServices(ctx).heartbeat.updateSettings(body, auditor);

export const sendHeartbeatNow = (ctx: ConsoleContext, auditor: string) => getOpsServices(ctx).heartbeat.sendNow(auditor);

export async function setEndpointIncluded(ctx: ConsoleContext, endpointId: string, included: boolean, auditor: string): Promise<{ endpointId: string; included: boolean }> {
  if (!ctx.catalog.endpoints.some((e) => e.id === endpointId)) throw notFound(`endpoint ${endpointId} is not in the catalog`);
  await getOpsServices(ctx).heartbeat.setIncluded(endpointId, included, auditor);
  return { endpointId, included };
}
