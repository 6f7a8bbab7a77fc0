// The signed-in user's session, held entirely in one encrypted cookie (no server-side store: the console may run
// as several instances and must survive restarts). AES-256-GCM via node:crypto keeps sealing synchronous, so
// tests and route handlers can mint and read sessions without awaiting; GCM's tag makes any tampered byte fail
// to open. The key is derived from NIMBUS_AUTH_SESSION_SECRET with HKDF and a purpose label, so the same secret can
// also key the short-lived sign-in cookie (server/auth/sealed.ts) without the two ever being interchangeable.
import { z } from 'zod';
import type { Principal } from './principal.ts';
import { openSealed, seal } from './sealed.ts';

/** The session cookie's name on a plain-http console (loopback trials): `__Host-` needs Secure, which http cannot set. */
export const SESSION_COOKIE = 'nimbus_session';
/**
 * Its name when the console is https (Secure cookies). The `__Host-` prefix makes the browser accept the cookie
 * only with Secure, Path=/ and no Domain, from this exact host over https: a sibling subdomain or a plain-http
 * page on the same name cannot plant or shadow a session (cookie tossing).
 */
export const SECURE_SESSION_COOKIE = '__Host-nimbus_session';
export const sessionCookieName = (secure: boolean): string => (secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE);

/**
 * How long the roles and groups read from the id token are trusted. The session may last up to 30 days, but
 * role and group membership change in the identity provider: after this long the session no longer counts and
 * the browser goes through the provider again (without a prompt while the provider's own session lasts), which
 * brings the current claims. Grants stored in the console are re-read every few seconds anyway (grants.ts).
 */
export const ROLES_MAX_AGE_SECONDS = 3600;

/** HKDF purpose label for session cookies; changing it signs everybody out. */
const SESSION_PURPOSE = 'nimbus-console session v1';

export interface SealOptions {
  /** NIMBUS_AUTH_SESSION_SECRET: at least 32 bytes. */
  secret: string;
  /** How long the session is valid from now; enforced when opening, whatever the browser does with the cookie. */
  maxAgeSeconds: number;
  /** Clock override for tests (ms since epoch). */
  now?: number;
}

export interface OpenOptions {
  secret: string;
  now?: number;
}

const principalSchema = z.object({
  kind: z.enum(['user', 'service', 'anonymous']),
  id: z.string().min(1),
  name: z.string(),
  roles: z.array(z.string()),
  groups: z.array(z.string()),
});

const sessionSchema = z.object({
  p: principalSchema,
  /** Issued at and expires at, seconds since epoch. */
  iat: z.number().int(),
  exp: z.number().int(),
});

/** Encrypts the principal and its expiry into a cookie value (URL-safe, no `;`/`,`/spaces). */
export function sealSession(principal: Principal, options: SealOptions): string {
  if (!(options.maxAgeSeconds > 0)) throw new RangeError('maxAgeSeconds must be positive');
  const iat = Math.floor((options.now ?? Date.now()) / 1000);
  const p: Principal = {
    kind: principal.kind,
    id: principal.id,
    name: principal.name,
    roles: [...principal.roles],
    groups: [...principal.groups],
  };
  return seal({ p, iat, exp: iat + Math.floor(options.maxAgeSeconds) }, options.secret, SESSION_PURPOSE);
}

/** The principal in a session cookie value and when the session ends (seconds since epoch); null when it is
 *  missing, tampered with, sealed with another secret or expired. */
export function openSessionWithExpiry(
  value: string | undefined | null,
  options: OpenOptions,
): { principal: Principal; expiresAt: number; issuedAt: number } | null {
  if (!value) return null;
  const parsed = sessionSchema.safeParse(openSealed(value, options.secret, SESSION_PURPOSE));
  if (!parsed.success) return null;
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  if (parsed.data.exp <= now) return null;
  return { principal: parsed.data.p, expiresAt: parsed.data.exp, issuedAt: parsed.data.iat };
}

/** The principal in a session cookie value; null when it is missing, tampered with, sealed with another secret or expired. */
export function openSession(value: string | undefined | null, options: OpenOptions): Principal | null {
  return openSessionWithExpiry(value, options)?.principal ?? null;
}
