// The platform catalog (DESIGN.md §4): endpoints, the event types each produces and consumes, and per event type
// an optional session key, JSON schema and example payload. The provisioner, the console and the SDK hosts all
// read the same file, so every cross-reference is checked here, once.
import { z } from 'zod';
import { HEARTBEAT_EVENT_TYPE_ID } from './heartbeat.ts';
import { Address, Subscription, Topic } from './properties.ts';

/** Service Bus entity names we create: letters, digits, '.', '_', '-', at most 50 characters. */
export const NAME_PATTERN = /^[A-Za-z0-9._-]+$/;
export const NAME_MAX_LENGTH = 50;

/** Why a name is not usable as a topic, subscription or rule name; undefined when it is. */
export function nameProblem(name: string): string | undefined {
  if (name.length === 0) return 'is empty';
  if (name.length > NAME_MAX_LENGTH) return `is ${name.length} characters long (at most ${NAME_MAX_LENGTH})`;
  const bad = [...name].find((ch) => !NAME_PATTERN.test(ch));
  if (bad !== undefined) return `contains '${bad}' (only letters, digits, '.', '_' and '-' are allowed)`;
  return undefined;
}

const entityName = z.string().superRefine((name, ctx) => {
  const problem = nameProblem(name);
  if (problem) ctx.addIssue({ code: 'custom', message: `name '${name}' ${problem}` });
});

/**
 * Names that already mean something on the wire or in the topology: an endpoint or event type with one of these
 * names would collide with a platform topic, a fixed subscription or a reserved address. Entity names are
 * case-insensitive in Service Bus, so the comparison is too.
 */
export const RESERVED_NAMES: readonly string[] = [
  Topic.Resolver,
  Topic.Manager,
  Address.Continuation,
  Address.Retry,
  Address.Deferred,
  Address.DeferredProcessor,
  Subscription.Resolver,
  'self',
];
const isReserved = (name: string) => RESERVED_NAMES.some((r) => r.toLowerCase() === name.toLowerCase());

export const catalogEndpointSchema = z.object({
  id: entityName,
  owner: z.string().min(1).optional(),
  description: z.string().optional(),
  produces: z.array(z.string()).default([]),
  consumes: z.array(z.string()).default([]),
});
export type CatalogEndpoint = z.infer<typeof catalogEndpointSchema>;

export const catalogEventTypeSchema = z.object({
  id: entityName,
  description: z.string().optional(),
  /** Top-level payload property whose value becomes the SessionId, so that events of one entity stay ordered. */
  sessionKey: z.string().min(1).optional(),
  /** A JSON Schema for the payload (documentation for the console; not enforced by the broker). */
  schema: z.record(z.string(), z.unknown()).optional(),
  /** An example payload: shown in the console and used by the demo traffic. */
  example: z.record(z.string(), z.unknown()).optional(),
});
export type CatalogEventType = z.infer<typeof catalogEventTypeSchema>;

export const catalogSchema = z
  .object({
    name: z.string().optional(),
    description: z.string().optional(),
    endpoints: z.array(catalogEndpointSchema).min(1, 'a catalog needs at least one endpoint'),
    eventTypes: z.array(catalogEventTypeSchema).default([]),
  })
  .superRefine((catalog, ctx) => {
    const endpointIds = new Map<string, number>();
    catalog.endpoints.forEach((endpoint, i) => {
      const key = endpoint.id.toLowerCase();
      if (endpointIds.has(key)) {
        ctx.addIssue({ code: 'custom', path: ['endpoints', i, 'id'], message: `endpoint '${endpoint.id}' is declared twice` });
      }
      endpointIds.set(key, i);
      if (isReserved(endpoint.id)) {
        ctx.addIssue({ code: 'custom', path: ['endpoints', i, 'id'], message: `endpoint id '${endpoint.id}' is reserved by the platform` });
      }
    });

    const eventTypeIds = new Set<string>();
    catalog.eventTypes.forEach((type, i) => {
      const key = type.id.toLowerCase();
      if (eventTypeIds.has(key)) {
        ctx.addIssue({ code: 'custom', path: ['eventTypes', i, 'id'], message: `event type '${type.id}' is declared twice` });
      }
      eventTypeIds.add(key);
      if (isReserved(type.id) || key === HEARTBEAT_EVENT_TYPE_ID.toLowerCase()) {
        ctx.addIssue({ code: 'custom', path: ['eventTypes', i, 'id'], message: `event type id '${type.id}' is reserved by the platform` });
      }
      // A raw publish is addressed To = the event type id; if that were also an endpoint id, the publish would
      // match that endpoint's main subscription as well as the forwarders.
      if (endpointIds.has(key)) {
        ctx.addIssue({ code: 'custom', path: ['eventTypes', i, 'id'], message: `event type id '${type.id}' is also an endpoint id` });
      }
      if (type.sessionKey && type.example && type.example[type.sessionKey] == null) {
        ctx.addIssue({
          code: 'custom',
          path: ['eventTypes', i, 'example'],
          message: `the example of '${type.id}' has no value for its session key '${type.sessionKey}'`,
        });
      }
    });

    catalog.endpoints.forEach((endpoint, i) => {
      for (const role of ['produces', 'consumes'] as const) {
        const seen = new Set<string>();
        endpoint[role].forEach((typeId, j) => {
          if (!eventTypeIds.has(typeId.toLowerCase())) {
            ctx.addIssue({
              code: 'custom',
              path: ['endpoints', i, role, j],
              message: `endpoint '${endpoint.id}' ${role} '${typeId}', which is not declared in eventTypes`,
            });
          }
          if (seen.has(typeId.toLowerCase())) {
            ctx.addIssue({ code: 'custom', path: ['endpoints', i, role, j], message: `endpoint '${endpoint.id}' lists '${typeId}' twice in ${role}` });
          }
          seen.add(typeId.toLowerCase());
        });
      }
    });
  });

export type Catalog = z.infer<typeof catalogSchema>;
