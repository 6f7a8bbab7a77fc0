// The server's half of "validate an edited payload against its event type's schema": the console's editor checks
// the same catalog schema with the same code (payloadSchema.ts in the SDK contract) before it sends, and the
// resubmit route checks again here, because a browser's check is only a convenience and any client can POST.
import { compilePayloadSchema, describePayloadIssues, payloadIssues, type Catalog } from '@nimbus/sdk/contract';
import type { ZodType } from 'zod';
import { HttpError, badRequest } from './http.ts';

// Compiled once per catalog object and event type: the catalog is loaded once per process.
const compiled = new WeakMap<Catalog, Map<string, ZodType | Error>>();

/** The compiled schema of an event type in the catalog; undefined without one, an Error when it cannot be used. */
export function schemaFor(catalog: Catalog, eventTypeId: string): ZodType | Error | undefined {
  const json = catalog.eventTypes.find((t) => t.id === eventTypeId)?.schema;
  if (!json) return undefined;
  let perType = compiled.get(catalog);
  if (!perType) compiled.set(catalog, (perType = new Map()));
  let schema = perType.get(eventTypeId);
  if (!schema) perType.set(eventTypeId, (schema = compilePayloadSchema(json)));
  return schema;
}

/**
 * Throws 400 when `payload` does not match the catalog schema of `eventTypeId`; an event type without a schema
 * accepts any payload. The message names each failing path, not the values (payloads are never echoed or logged).
 */
export function requirePayloadMatchesSchema(catalog: Catalog, eventTypeId: string | null | undefined, payload: unknown): void {
  if (!eventTypeId) return;
  const schema = schemaFor(catalog, eventTypeId);
  if (schema === undefined) return;
  // The operator cannot fix the catalog from here: a server-side configuration problem, as the Agent API says too.
  if (schema instanceof Error)
    throw new HttpError(503, 'not configured', `the catalog's JSON schema of ${eventTypeId} cannot be checked: ${schema.message}`);
  const issues = payloadIssues(schema, payload);
  if (issues.length > 0)
    throw badRequest(`the payload does not match the catalog's JSON schema of ${eventTypeId}: ${describePayloadIssues(issues.slice(0, 10))}`);
}
