// The handoff token: what ctx.markPendingHandoff returns, and what both handoff clients accept in place of the
// coordinates. It carries the pending event's coordinates exactly as the delivery had them (endpoint, event, session,
// the MessageId of the delivery that parked it, ...), so an agent that stores the token with its external job
// settles the right handoff without copying ids by hand - the usual way a settlement went to the wrong event.
// Opaque to authors (`nh1.` + base64url JSON + `.` + a check of it, so a truncated or edited copy is refused); not a secret and not a credential: the console still checks the
// caller's rights and that the event is the pending handoff named, and the subscriber refuses anything else.
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { describeIssues } from './contract/index.ts';
import { HandoffClientError, handoffCoordinatesSchema } from './handoffClient.ts';
import type { HandoffCoordinates } from './handoffClient.ts';

declare const brand: unique symbol;
/** An opaque string from ctx.markPendingHandoff; pass it to HandoffClient / ConsoleHandoffClient. */
export type HandoffToken = string & { readonly [brand]: 'HandoffToken' };

const PREFIX = 'nh1.';

export function createHandoffToken(coordinates: HandoffCoordinates): HandoffToken {
  const c = handoffCoordinatesSchema.parse(coordinates);
  const body = Buffer.from(JSON.stringify(c), 'utf8').toString('base64url');
  return `${PREFIX}${body}.${check(body)}` as HandoffToken;
}

export function isHandoffToken(value: unknown): value is HandoffToken {
  return typeof value === 'string' && value.startsWith(PREFIX);
}

/** The coordinates in a token; a HandoffClientError says what is wrong with one that is not a token. */
export function readHandoffToken(token: string): HandoffCoordinates {
  if (!isHandoffToken(token))
    throw new HandoffClientError(
      'not a handoff token: pass the value ctx.markPendingHandoff returned, or the coordinates object',
    );
  const [body = '', sum] = token.slice(PREFIX.length).split('.');
  if (sum !== check(body))
    throw new HandoffClientError(
      'the handoff token is damaged (its check does not match): pass it exactly as returned',
    );
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw new HandoffClientError('the handoff token is damaged (not readable): pass it exactly as returned');
  }
  const parsed = handoffCoordinatesSchema.safeParse(value);
  if (!parsed.success)
    throw new HandoffClientError(
      `the handoff token is damaged: ${describeIssues(parsed.error as z.ZodError)}`,
    );
  return parsed.data;
}

/** Detects accidental damage (truncation, an edit); not a signature. */
function check(body: string): string {
  return createHash('sha256').update(body).digest('hex').slice(0, 12);
}
