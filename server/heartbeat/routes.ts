// What the Admin → Health route handlers call: request schemas and glue.
import { z } from 'zod';
import type { ConsoleContext } from '../context.ts';
import { conflict, HttpError, notFound } from '../http.ts';
import { getOpsServices } from './services.ts';
import type { VersionedHeartbeatSettings } from './scheduler.ts';

/**
 * `version` is the `settings.version` of GET /api/admin/health (optional here only so that leaving it out gets
 * its own answer, 428, rather than a generic 400).
 */
export const heartbeatSettingsBody = z
  .object({
    enabled: z.boolean().optional(),
    intervalSeconds: z.number().int().min(1).max(86_400).optional(),
    timeoutSeconds: z.number().int().min(1).max(86_400).optional(),
    version: z.string().min(1).max(200).optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).some((k) => k !== 'version'), 'nothing to change');

export const endpointInclusionBody = z.object({ included: z.boolean() }).strict();

export const healthOverview = (ctx: ConsoleContext) => getOpsServices(ctx).heartbeat.overview();

/**
 * Saves the changed fields if the settings are still at the version the caller read: 428 without a version, 409
 * (nothing applied) when another save came first. No caller predates the version, so none is exempt.
 */
export async function updateHeartbeatSettings(
  ctx: ConsoleContext,
  body: z.output<typeof heartbeatSettingsBody>,
  auditor: string,
): Promise<VersionedHeartbeatSettings> {
  const { version, ...patch } = body;
  if (version === undefined)
    throw new HttpError(428, 'precondition required', 'send `version`: the settings.version from GET /api/admin/health that your change is based on');
  const r = await getOpsServices(ctx).heartbeat.updateSettings(patch, version, auditor);
  if ('stale' in r)
    throw conflict(
      'the heartbeat settings changed since you read them (another save came first); nothing was applied. Read them again (GET /api/admin/health) and save your change with the new settings.version',
    );
  return r.saved;
}

export const sendHeartbeatNow = (ctx: ConsoleContext, auditor: string) => getOpsServices(ctx).heartbeat.sendNow(auditor);

export async function setEndpointIncluded(ctx: ConsoleContext, endpointId: string, included: boolean, auditor: string): Promise<{ endpointId: string; included: boolean }> {
  if (!ctx.catalog.endpoints.some((e) => e.id === endpointId)) throw notFound(`endpoint ${endpointId} is not in the catalog`);
  await getOpsServices(ctx).heartbeat.setIncluded(endpointId, included, auditor);
  return { endpointId, included };
}
