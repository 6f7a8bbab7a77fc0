// Alert rules, channels, their evaluation state and the alert history, as stored in the `alerts` container
// (partitioned on /kind) and as the API accepts them. Inputs are validated with zod; secrets in a channel's
// settings are sealed (secrets.ts) before they are stored and replaced by `{ set: true }` when read back.
import { z } from 'zod';

import { RULE_TYPES, type RuleType } from './ruleTypes.ts';
import { exactIdTarget } from '../exactIdFilterSchema.ts';
import { isLoopbackName } from '../../lib/net/loopback.ts';
import { hostProblem, urlTargetProblem } from './channelTarget.ts';

export { RULE_TYPES, type RuleType };

const id = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'an id is letters, digits and dashes');
// Taken exactly as sent, by the one rule for an id a command names (server/exactIdFilters.ts): it was trimmed, so
// " billingendpoint" was stored as billingendpoint. Spaces alone, a space in it or over-long is a 400 in the rule's
// words; null (where the rule type allows it) is every endpoint.
const endpointId = exactIdTarget('endpointId');

export const ruleInputSchema = z
  .object({
    name: z.string().trim().min(1).max(120),
    type: z.enum(RULE_TYPES),
    /** failureRate: required; deadLetterBacklog, blockedSession, pendingHandoff, heartbeatMissing: optional filter. */
    endpointId: endpointId.nullable().default(null),
    /** failureRate: failures per minute; deadLetterBacklog: dead letters. Fires when the value is above it. */
    threshold: z.number().int().min(0).max(10_000_000).nullable().default(null),
    /** blockedSession, heartbeatMissing, resolverLiveness: how old (seconds) counts as a problem. */
    durationSeconds: z.number().int().min(10).max(30 * 86_400).nullable().default(null),
    /** After a fire, no new fire for this long (a flapping condition sends one alert). */
    cooldownSeconds: z.number().int().min(0).max(7 * 86_400).default(900),
    channelIds: z.array(id).max(20).default([]),
    enabled: z.boolean().default(true),
  })
  .strict()
  .superRefine((r, ctx) => {
    if (r.type === 'failureRate' && r.endpointId === null) ctx.addIssue({ code: 'custom', path: ['endpointId'], message: 'a failure-rate rule names an endpoint' });
    if ((r.type === 'failureRate' || r.type === 'deadLetterBacklog') && r.threshold === null)
      ctx.addIssue({ code: 'custom', path: ['threshold'], message: `a ${r.type} rule needs a threshold` });
    if ((r.type === 'blockedSession' || r.type === 'heartbeatMissing') && r.durationSeconds === null)
      ctx.addIssue({ code: 'custom', path: ['durationSeconds'], message: `a ${r.type} rule needs durationSeconds` });
  });
export type RuleInput = z.output<typeof ruleInputSchema>;

export interface RuleDoc extends RuleInput {
  id: string;
  kind: 'rule';
  createdAt: string;
  updatedAt: string;
  updatedBy: string;
  /** The stable id (principalKey) of who changed it last, beside the display name; absent on rules saved before it was. */
  updatedById?: string;
}

export const CHANNEL_TYPES = ['webhook', 'teams', 'slack', 'email'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

// A channel's URL is itself a credential and carries the notice (and a webhook's extra headers): https only. Plain
// http is let through to a loopback host alone, where nothing crosses a network - the local receivers of the tests
// and of a developer's machine (server/alerts/testing.ts). Checked on input and again before each send (channels.ts),
// since a URL stored before the rule existed is not input again.
export function isAllowedChannelUrl(u: string): boolean {
  try {
    const url = new URL(u);
    return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackName(url.hostname.replace(/^\[|\]$/g, '')));
  } catch {
    return false;
  }
}

const httpsUrl = z
  .string()
  .trim()
  .max(2000)
  .refine(isAllowedChannelUrl, 'an https URL (plain http only to a loopback host: localhost, 127.x.y.z or [::1])')
  // Not the console's own servers, nor a metadata address (channelTarget.ts); a name is checked again when sent.
  .superRefine((u, ctx) => {
    const problem = urlTargetProblem(u);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
  });

const email = z.string().trim().max(320).regex(/^[^\s@<>]+@[^\s@<>]+$/, 'an e-mail address');

/**
 * Settings as the API accepts them; a secret left out on update keeps the stored one, unless the edit moves the
 * channel to another destination (channelDestination.ts). An empty value (`headers: {}`, `password: ""`) removes it.
 */
export const channelInputSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('webhook'),
      name: z.string().trim().min(1).max(120),
      url: httpsUrl.optional(),
      /** Extra headers (an Authorization value, say): stored sealed like the URL. */
      headers: z.record(z.string().regex(/^[A-Za-z0-9-]{1,64}$/), z.string().max(2000)).optional(),
    })
    .strict(),
  z.object({ type: z.literal('teams'), name: z.string().trim().min(1).max(120), url: httpsUrl.optional() }).strict(),
  z.object({ type: z.literal('slack'), name: z.string().trim().min(1).max(120), url: httpsUrl.optional() }).strict(),
  z
    .object({
      type: z.literal('email'),
      name: z.string().trim().min(1).max(120),
      host: z.string().trim().min(1).max(255),
      port: z.number().int().min(1).max(65535).default(587),
      /** TLS from the first byte (port 465); otherwise STARTTLS, required to any host but loopback (channels.ts smtpTransportOptions). */
      secure: z.boolean().default(false),
      username: z.string().max(320).optional(),
      password: z.string().max(1000).optional(),
      from: email,
      to: z.array(email).min(1).max(50),
    })
    .strict()
    .superRefine((c, ctx) => {
      const problem = hostProblem(c.host, c.port);
      if (problem !== null) ctx.addIssue({ code: 'custom', path: ['host'], message: problem });
    }),
]);
export type ChannelInput = z.output<typeof channelInputSchema>;

/** A channel as stored: the secret fields sealed. */
export interface ChannelDoc {
  id: string;
  kind: 'channel';
  type: ChannelType;
  name: string;
  /** Non-secret settings (email host, port, from, to, username). */
  settings: Record<string, unknown>;
  /** Sealed secrets by field name (url, headers as JSON, password). */
  secrets: Record<string, string>;
  createdAt: string;
  updatedAt: string;
  updatedBy: string;
  /** As RuleDoc's: absent on channels saved before it was recorded. */
  updatedById?: string;
}

/** A channel as the API shows it: the secrets only as "set". */
export interface ChannelView {
  id: string;
  type: ChannelType;
  name: string;
  settings: Record<string, unknown>;
  secrets: Record<string, { set: true }>;
  /**
   * Present (true) when the stored target is one every send refuses (plain http to a host other than this machine,
   * stored before https was required, or a stored value that is no https URL at all; or a URL or SMTP host naming
   * one of the console's own servers or a platform address, channelTarget.ts): the list says so rather than the
   * first alert finding out. Only the flag and its reason are shown, never the URL (server/alerts/routes.ts).
   */
  insecureUrl?: true;
  /** With insecureUrl: why, in words the console shows under the channel's name (alertStore.ts refusedAtSend). */
  insecureReason?: string;
  updatedAt: string;
  updatedBy: string;
  updatedById?: string;
}

export function channelView(d: ChannelDoc): ChannelView {
  return {
    id: d.id,
    type: d.type,
    name: d.name,
    settings: d.settings,
    secrets: Object.fromEntries(Object.keys(d.secrets).map((k) => [k, { set: true as const }])),
    updatedAt: d.updatedAt,
    updatedBy: d.updatedBy,
    ...(d.updatedById !== undefined ? { updatedById: d.updatedById } : {}),
  };
}

/** Evaluation state of one rule: written with an etag condition, so of two evaluators one wins each transition. */
export interface RuleStateDoc {
  id: string;
  kind: 'state';
  ruleId: string;
  firing: boolean;
  /** The history entry of the current (or last) fire. */
  alertId: string | null;
  lastFiredAt: string | null;
  /** Fires skipped because of the cool-down since the last fire. */
  suppressed: number;
  /** Per rule type memory (newFailureGroup: the groups already announced). */
  memory?: Record<string, unknown>;
  evaluatedAt: string;
  /** The last evaluation, for the Alerts page: ok, firing, or unavailable (with why). */
  lastStatus?: 'ok' | 'firing' | 'unavailable';
  lastDetail?: string;
  /**
   * Whose records lastDetail names (the firing evaluation's firedFor; null: none). Missing on a state written
   * before it was recorded: the detail is then shown only to callers who may read every endpoint.
   */
  lastDetailFor?: string | null;
}

export interface Delivery {
  channelId: string;
  notice: 'fired' | 'recovered';
  ok: boolean;
  error?: string;
  at: string;
}

/** One alert: what fired, when, and when it recovered. */
export interface AlertDoc {
  id: string;
  kind: 'alert';
  ruleId: string;
  ruleName: string;
  ruleType: RuleType;
  endpointId: string | null;
  firedAt: string;
  recoveredAt: string | null;
  value: number;
  threshold: number | null;
  summary: string;
  /** The console page that shows the problem (relative; the notice makes it absolute with NIMBUS_CONSOLE_URL). */
  link: string;
  /**
   * The endpoint whose records the summary and link name (conditions.ts, `firedFor`): for a site-wide rule the one
   * it fired for; null when they name none. Missing on an alert stored before it was recorded: its text is then
   * shown only to callers who may read every endpoint (readScope.ts).
   */
  firedFor?: string | null;
  deliveries: Delivery[];
  /**
   * Set when the alert was closed by the operator rather than by its condition: the rule was disabled or deleted
   * while firing (alertStore.ts closeFiring). recoveredAt is then when that happened, and no "recovered" notice was
   * sent. Absent on an alert that recovered (or is still firing).
   */
  closedBy?: AlertClosedBy;
}

/** Why an alert was closed without its condition recovering (AlertDoc.closedBy). */
export type AlertClosedBy = 'ruleDisabled' | 'ruleDeleted';

export { id as alertIdSchema };
