// Request shapes of the Agent API (docs/agents.md), validated with zod in the routes.
import { z } from 'zod';
import { endpointIdParam, handoffResultSchema, idParam, payloadSchema } from '../schemas.ts';
import { exactIdFilter, exactIdTarget } from '../exactIdFilterSchema.ts';
import { MAX_WAIT_SECONDS } from './handoffs.ts';

// Ids are taken exactly as the agent sent them, spaces and all, by the console's one id rule
// (server/exactIdFilters.ts): agents are programs, and an id trimmed into another one would act on something the
// agent did not name. Spaces alone and over-long ids are refused with the rule's message.

/** The most event ids one receive excludes, `exclude` and `excludeId` together. */
export const MAX_EXCLUDED_IDS = 100;

/** The receive query's fields, before `exclude` and `excludeId` are checked together and joined (receiveQuery). */
export const receiveQueryFields = z.object({
  endpointId: endpointIdParam,
  /** Only handoffs of this event type (exact; empty: any). */
  eventTypeId: exactIdFilter('eventTypeId'),
  /** 0 answers at once; at most 30. */
  waitSeconds: z.coerce.number().int().min(0).max(MAX_WAIT_SECONDS).default(0),
  /**
   * Comma-separated event ids the agent already holds, each taken exactly as sent (split on ',' alone): trimmed, an
   * excluded " INV-9" excluded "INV-9" and handed " INV-9" back. An item empty or of spaces alone names no event and
   * is refused in the rule's words rather than dropped. Empty (or left out): nothing excluded.
   */
  exclude: z
    .string()
    .max(MAX_EXCLUDED_IDS * 130)
    .optional()
    .transform((s) => (s ? s.split(',') : []))
    .pipe(z.array(exactIdTarget('eventId')).max(MAX_EXCLUDED_IDS, `exclude names at most ${MAX_EXCLUDED_IDS} event ids`)),
  /**
   * More ids to exclude, one per repeated `excludeId` parameter, each taken whole, exactly as sent: the only way to
   * name an event id with a comma in it, which `exclude` splits. The route passes every value (a list); one value
   * alone is taken as a list of one.
   */
  excludeId: z
    .preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(exactIdTarget('eventId')).max(MAX_EXCLUDED_IDS, `excludeId names at most ${MAX_EXCLUDED_IDS} event ids`))
    .optional(),
});

/** The receive query: `exclude` and `excludeId` joined into one list of at most MAX_EXCLUDED_IDS ids. */
export const receiveQuery = receiveQueryFields
  .superRefine((q, ctx) => {
    const total = q.exclude.length + (q.excludeId?.length ?? 0);
    if (total > MAX_EXCLUDED_IDS)
      ctx.addIssue({ code: 'custom', path: ['excludeId'], message: `exclude and excludeId name at most ${MAX_EXCLUDED_IDS} event ids together (got ${total})` });
  })
  .transform(({ excludeId, ...q }) => ({ ...q, exclude: [...q.exclude, ...(excludeId ?? [])] }));

export const settleBody = z
  .object({
    endpointId: endpointIdParam,
    eventId: idParam,
    messageId: idParam,
    outcome: z.enum(['completed', 'failed']),
    note: z.string().max(2000).optional(),
    /** For `completed`: what the work produced (recorded by the Resolver); no deeper than a payload. */
    result: handoffResultSchema,
    errorText: z.string().trim().min(1).max(4000).optional(),
    errorType: z.string().trim().min(1).max(200).optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    if (b.outcome === 'failed' && b.errorText === undefined)
      ctx.addIssue({ code: 'custom', path: ['errorText'], message: 'errorText is required when the outcome is failed' });
    if (b.outcome === 'completed' && (b.errorText !== undefined || b.errorType !== undefined))
      ctx.addIssue({ code: 'custom', path: ['errorText'], message: 'errorText and errorType belong to a failed outcome' });
    if (b.outcome === 'failed' && b.result !== undefined)
      ctx.addIssue({ code: 'custom', path: ['result'], message: 'result belongs to a completed outcome' });
    // The failure command has no note (the operator's fail route refuses one as well): accepting it here answered
    // 200 and dropped it, so the agent believed it recorded.
    if (b.outcome === 'failed' && b.note !== undefined)
      ctx.addIssue({ code: 'custom', path: ['note'], message: 'note belongs to a completed outcome (a failure says why in errorText)' });
  });
export type SettleBody = z.output<typeof settleBody>;

export const publishBody = z
  .object({
    eventTypeId: exactIdTarget('eventTypeId'),
    /** The publishing endpoint; may be left out when the agent holds the Agent's rights on exactly one. */
    endpointId: endpointIdParam.optional(),
    /** The session to publish into, as sent (" S1" is not "S1"); left out: the catalog's session key. */
    sessionId: exactIdTarget('sessionId').optional(),
    payload: payloadSchema,
  })
  .strict();
export type PublishBody = z.output<typeof publishBody>;
