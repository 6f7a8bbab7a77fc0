// Checking a payload against the JSON Schema an event type has in the catalog. One implementation for every place
// that checks (the Publisher before a send, the console's edit-and-resubmit editor in the browser, the console's
// resubmit route on the server), so they can never disagree. Browser-safe: zod only.
import { z } from 'zod';

/** One way a payload misses its schema: where (a JSON path; empty is the root) and what. */
export interface PayloadIssue {
  path: Array<string | number>;
  message: string;
}

/** The catalog's JSON Schema as a zod schema, or the Error saying why it cannot be used. */
export function compilePayloadSchema(jsonSchema: Record<string, unknown>): z.ZodType | Error {
  try {
    return z.fromJSONSchema(jsonSchema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

function valueAt(root: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let v: unknown = root;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

/** Every issue of `payload` against `schema`; empty when it matches. Missing properties are said as such. */
export function payloadIssues(schema: z.ZodType, payload: unknown): PayloadIssue[] {
  const parsed = schema.safeParse(payload);
  if (parsed.success) return [];
  return parsed.error.issues.map((issue) => {
    const path = issue.path.filter((k): k is string | number => typeof k !== 'symbol');
    // zod says "expected string, received undefined" for an absent required property; an operator reads
    // "required property is missing" faster.
    const missing = issue.code === 'invalid_type' && path.length > 0 && valueAt(payload, path) === undefined;
    return { path, message: missing ? 'required property is missing' : issue.message };
  });
}

/** `lines.0.quantity` style; `(root)` for the payload itself. */
export function formatPayloadPath(path: ReadonlyArray<string | number>): string {
  return path.length === 0 ? '(root)' : path.map(String).join('.');
}

/** All issues on one line, for an error answer or an exception message. */
export function describePayloadIssues(issues: readonly PayloadIssue[]): string {
  return issues.map((i) => `${formatPayloadPath(i.path)}: ${i.message}`).join('; ');
}
