// Rules over AMQP ($management add-rule / remove-rule / enumerate-rules, used by the client's rule manager):
// request bodies to broker RuleDescriptions, and RuleDescriptions to the described lists the client decodes.

import rhea from 'rhea';
import { z } from 'zod';
import type { RuleDescription, RuleFilter } from '../broker/api.ts';
import { badRequest } from './errors.ts';

// Descriptor codes of the Service Bus rule types (0x00000137:0000000N).
const RULE_DESCRIPTION = 0x13700000004;
const EMPTY_RULE_ACTION = 0x13700000005;
const SQL_RULE_ACTION = 0x13700000006;
const SQL_FILTER = 0x1370000006;
const TRUE_FILTER = 0x1370000007;
const FALSE_FILTER = 0x1370000008;
const CORRELATION_FILTER = 0x1370000009;

const optional = z.string().nullish();
const addRuleBody = z.object({
  'rule-name': z.string().min(1),
  'rule-description': z.object({
    'sql-filter': z.object({ expression: z.string() }).nullish(),
    'correlation-filter': z
      .object({
        'correlation-id': optional,
        'message-id': optional,
        to: optional,
        'reply-to': optional,
        label: optional,
        'session-id': optional,
        'reply-to-session-id': optional,
        'content-type': optional,
        properties: z
          .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.date(), z.null()]))
          .nullish(),
      })
      .nullish(),
    'sql-rule-action': z.object({ expression: z.string() }).nullish(),
  }),
});
const removeRuleBody = z.object({ 'rule-name': z.string().min(1) });
const enumerateRulesBody = z.object({
  top: z.number().int().min(0).optional(),
  skip: z.number().int().min(0).optional(),
});

function parseBody<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const result = schema.safeParse(body ?? {});
  if (!result.success) {
    const issue = result.error.issues[0];
    throw badRequest(
      `Invalid ${what} request: ${issue ? `${issue.path.join('.')} ${issue.message}` : 'malformed'}`,
    );
  }
  return result.data;
}

export function parseAddRule(body: unknown): RuleDescription {
  const parsed = parseBody(addRuleBody, body, 'add-rule');
  const d = parsed['rule-description'];
  let filter: RuleFilter;
  if (d['sql-filter']) {
    filter = { kind: 'sql', sqlExpression: d['sql-filter'].expression };
  } else if (d['correlation-filter']) {
    const c = d['correlation-filter'];
    const props = c.properties ?? undefined;
    filter = {
      kind: 'correlation',
      correlationId: c['correlation-id'] ?? undefined,
      messageId: c['message-id'] ?? undefined,
      to: c.to ?? undefined,
      replyTo: c['reply-to'] ?? undefined,
      subject: c.label ?? undefined,
      sessionId: c['session-id'] ?? undefined,
      replyToSessionId: c['reply-to-session-id'] ?? undefined,
      contentType: c['content-type'] ?? undefined,
      applicationProperties: props && Object.keys(props).length ? props : undefined,
    };
  } else {
    throw badRequest('add-rule needs a sql-filter or a correlation-filter');
  }
  const rule: RuleDescription = { name: parsed['rule-name'], filter };
  if (d['sql-rule-action']) rule.action = { sqlExpression: d['sql-rule-action'].expression };
  return rule;
}

export function parseRemoveRule(body: unknown): string {
  return parseBody(removeRuleBody, body, 'remove-rule')['rule-name'];
}

export function parseEnumerateRules(body: unknown): { top?: number; skip: number } {
  const parsed = parseBody(enumerateRulesBody, body, 'enumerate-rules');
  return { top: parsed.top, skip: parsed.skip ?? 0 };
}

const described = (code: number, fields: unknown[]): unknown =>
  rhea.types.described(rhea.types.wrap_ulong(code), rhea.types.wrap_list(fields));

function encodeFilter(filter: RuleFilter): unknown {
  switch (filter.kind) {
    case 'true':
      return described(TRUE_FILTER, []);
    case 'false':
      return described(FALSE_FILTER, []);
    case 'sql':
      return described(SQL_FILTER, [filter.sqlExpression, rhea.types.wrap_int(20)]);
    case 'correlation':
      return described(CORRELATION_FILTER, [
        filter.correlationId ?? null,
        filter.messageId ?? null,
        filter.to ?? null,
        filter.replyTo ?? null,
        filter.subject ?? null,
        filter.sessionId ?? null,
        filter.replyToSessionId ?? null,
        filter.contentType ?? null,
        rhea.types.wrap_map(filter.applicationProperties ?? {}),
      ]);
  }
}

/** One entry of the enumerate-rules reply: `{ "rule-description": described(filter, action, name, created) }`. */
export function encodeRule(rule: RuleDescription & { createdAt?: number }): Record<string, unknown> {
  const action = rule.action
    ? described(SQL_RULE_ACTION, [rule.action.sqlExpression, rhea.types.wrap_int(20)])
    : described(EMPTY_RULE_ACTION, []);
  return {
    'rule-description': described(RULE_DESCRIPTION, [
      encodeFilter(rule.filter),
      action,
      rule.name,
      new Date(rule.createdAt ?? Date.now()),
    ]),
  };
}
