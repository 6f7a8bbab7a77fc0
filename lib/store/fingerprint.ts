// Failure fingerprints: which cause a Failed, DeadLettered or Unsupported row belongs to. A fingerprint is the error
// type plus the error message with its variable parts (GUIDs, dates, quoted values, ids, amounts, numbers) replaced
// by placeholders, so "Order ORD-1001: total 1548.00 EUR exceeds…" and "Order ORD-2002: total 903.50 EUR exceeds…"
// are one group. It is endpoint-independent on purpose: one CRM outage failing three endpoints is one cause.
// The rules are an ordered list of replacements; the table of real examples in fingerprint.test.ts pins them.
// The row's own event and session ids are replaced first (ownIdsReplaced): an id without digits ("wh-bare") passes
// every rule unchanged, so without this each event would be a group of its own.
// Changing a rule changes group ids: rows written before keep their old fingerprint until the backfill is re-run
// (`npm run backfill:fingerprints -- --all`).
import { createHash } from 'node:crypto';

/** Statuses whose rows belong to a failure group. */
export const FAILURE_STATUSES = ['Failed', 'DeadLettered', 'Unsupported'] as const;

/** Ordered: earlier rules see the raw text (a GUID must be replaced before its digit groups look like numbers). */
const RULES: ReadonlyArray<readonly [RegExp, string]> = [
  // GUIDs / UUIDs, with or without braces.
  [/\{?\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b\}?/gi, '<guid>'],
  // ISO-8601 date-times and dates (2026-12-03T09:31:46.123Z, 2026-12-03 09:31, 2026-12-03).
  [/\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?/g, '<date>'],
  // Clock times (10:00, 09:31:46).
  [/\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b/g, '<time>'],
  // Quoted values: 'x', "x", `x` (short ones only: a quoted sentence is part of the message).
  [/'[^'\n]{1,120}'/g, "'<value>'"],
  [/"[^"\n]{1,120}"/g, '"<value>"'],
  [/`[^`\n]{1,120}`/g, '`<value>`'],
  // URLs keep their host (which service failed matters), lose path and query (which record does not).
  [/\b(https?:\/\/[^\s/'"]+)[^\s'"]*/gi, '$1/<path>'],
  // Long hex strings (hashes, message ids, trace ids).
  [/\b(?:0x)?[0-9a-f]{12,}\b/gi, '<hex>'],
  // Ids with a letter prefix and digits: ORD-1001, CUST-42, INV-2026-0001, LEDGER-INV-7, order_17, SKU12345.
  [/\b[A-Za-z][A-Za-z]*(?:[-_][A-Za-z]+)*[-_#]?\d[\w-]*\b/g, '<id>'],
  // Amounts (a decimal separator, optional thousands separators): 1,548.00 / 903.5 / 12.99.
  [/[-+]?\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|[-+]?\b\d+\.\d+\b/g, '<amount>'],
  // Any other number.
  [/\b\d+\b/g, '<n>'],
];

/** Own ids shorter than this are left to the rules: a two-letter id would eat ordinary words of the message. */
const OWN_ID_MIN_LENGTH = 3;
/** A whole token: not preceded or followed by a letter, digit, `_` or `-` (ids are made of those). */
const TOKEN_BEFORE = '(?<![\\w-])';
const TOKEN_AFTER = '(?![\\w-])';

/**
 * The text with the row's own ids (whole tokens, literal) replaced by `<id>`, the placeholder the rules give ids with
 * digits. Only ids the rules leave untouched are replaced: an id the rules already normalise (ORD-1, a GUID, a
 * number) keeps the placeholder it always had, so the group ids of such texts do not change.
 */
function ownIdsReplaced(text: string, ownIds: ReadonlyArray<string | null | undefined>): string {
  const ids = ownIds
    .filter((id): id is string => typeof id === 'string' && id.length >= OWN_ID_MIN_LENGTH && applyRules(id) === id)
    .sort((a, b) => b.length - a.length); // the longer first, should one id contain the other
  let out = text;
  for (const id of ids) {
    const escaped = id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    out = out.replace(new RegExp(`${TOKEN_BEFORE}${escaped}${TOKEN_AFTER}`, 'g'), '<id>');
  }
  return out;
}

function applyRules(text: string): string {
  let out = text;
  for (const [pattern, replacement] of RULES) out = out.replace(pattern, replacement);
  return out;
}

/**
 * The message with its variable parts replaced, whitespace collapsed, at most 300 characters. `ownIds`: the row's
 * event and session ids, replaced as ids wherever they appear whole.
 */
export function normaliseErrorText(text: string, ownIds: ReadonlyArray<string | null | undefined> = []): string {
  let out = ownIdsReplaced(text, ownIds);
  out = applyRules(out);
  return out.replace(/\s+/g, ' ').trim().slice(0, 300);
}

export interface FingerprintInput {
  status: string;
  errorType: string | null;
  errorText: string | null;
  deadLetterReason: string | null;
  deadLetterErrorDescription: string | null;
  eventTypeId: string | null;
  /** The row's own ids: named in its error text they are normalised to `<id>` even without digits. */
  eventId?: string | null;
  sessionId?: string | null;
}

export interface Fingerprint {
  /** Stable group id: a hash of the error type and the normalised message. */
  groupId: string;
  errorType: string;
  /** The normalised message: what the group is called. */
  title: string;
}

/**
 * The fingerprint of a row, or null for a row that is not a failure. What is fingerprinted: the error type and
 * text of a Failed row; a dead letter's reason (its description when there is no reason); an Unsupported row's event
 * type (the cause is "nobody handles this type", whatever the payload).
 */
export function fingerprintOf(row: FingerprintInput): Fingerprint | null {
  if (!(FAILURE_STATUSES as readonly string[]).includes(row.status)) return null;
  let errorType: string;
  let text: string;
  if (row.status === 'Unsupported') {
    errorType = 'Unsupported';
    text = `no handler for event type ${row.eventTypeId ?? '(none)'}`;
    // The type is the cause here; keep it out of the normalisation (an id-looking type name must survive).
    return { groupId: hashOf(errorType, text), errorType, title: text };
  }
  if (row.status === 'DeadLettered') {
    errorType = row.errorType ?? 'DeadLettered';
    text = row.errorText ?? row.deadLetterErrorDescription ?? row.deadLetterReason ?? '';
  } else {
    errorType = row.errorType ?? 'Error';
    text = row.errorText ?? row.deadLetterErrorDescription ?? '';
  }
  const title = normaliseErrorText(text, [row.eventId, row.sessionId]) || '(no message)';
  return { groupId: hashOf(errorType, title), errorType, title };
}

function hashOf(errorType: string, title: string): string {
  return createHash('sha256').update(`${errorType}\n${title}`).digest('hex').slice(0, 20);
}
