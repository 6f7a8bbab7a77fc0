// Resolves a request to the calling Principal: with NIMBUS_AUTH=off everybody is the anonymous principal (the
// console then only listens on loopback); otherwise the session cookie names a signed-in user and an
// `Authorization: Bearer` token names a service principal. Which principals may do what is authorization's call.
import { ANONYMOUS, type Principal } from './principal.ts';
import { currentAuthConfig, type AuthConfig } from './config.ts';
import { ROLES_MAX_AGE_SECONDS, openSessionWithExpiry, sessionCookieName } from './session.ts';
import { principalFromBearer } from './bearer.ts';

export { authMode } from './hardening.ts';

/** The value of one cookie in a Cookie header, or undefined. */
export function readCookie(header: string | null | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The principal behind a request: session cookie or bearer token; null when not signed in. */
export async function getPrincipal(request: Request): Promise<Principal | null> {
  const config = currentAuthConfig();
  if (config.mode === 'off') return ANONYMOUS;
  const authorization = request.headers.get('authorization');
  // A request that presents a bearer token is judged by that token alone: a bad token is not rescued by a cookie.
  if (authorization !== null && /^bearer\s/i.test(authorization)) {
    return principalFromBearer(authorization.replace(/^bearer\s+/i, '').trim(), config.provider);
  }
  return sessionFromCookies(request.headers.get('cookie'), config).principal;
}

/** Whether the console's cookies are Secure: exactly when its public address (the registered redirect URI) is https. */
export function secureCookies(config: AuthConfig): boolean {
  return config.mode !== 'off' && new URL(config.provider.redirectUri).protocol === 'https:';
}

/**
 * The session behind a Cookie header: the one way the console reads its session cookie, for requests
 * (getPrincipal) and pages (components/auth/viewer.ts) alike - the same name (`__Host-` on https) and the same
 * parsing (the first cookie of that name, as the browser sends the most specific first).
 */
export function sessionFromCookies(cookieHeader: string | null | undefined, config: AuthConfig = currentAuthConfig()): SessionView {
  if (config.mode === 'off') return sessionOf(undefined, config);
  return sessionOf(readCookie(cookieHeader, sessionCookieName(secureCookies(config))), config);
}

export interface SessionView {
  mode: AuthConfig['mode'];
  /** ANONYMOUS with sign-in off; null when sign-in is on and nobody is signed in (or the session expired). */
  principal: Principal | null;
  /** When the session ends (seconds since epoch); null with sign-in off or nobody signed in. */
  expiresAt: number | null;
}

/**
 * A session cookie's value opened: decrypted once for both the principal and the session's end. A session whose
 * claims (roles, groups) were read more than ROLES_MAX_AGE_SECONDS ago counts as not signed in, so that the
 * next page goes through the provider again and brings the current roles.
 */
export function sessionOf(
  cookieValue: string | null | undefined,
  config: AuthConfig = currentAuthConfig(),
  now: number = Date.now(),
): SessionView {
  if (config.mode === 'off') return { mode: 'off', principal: ANONYMOUS, expiresAt: null };
  const session = openSessionWithExpiry(cookieValue, { secret: config.session.secret, now });
  if (session === null || Math.floor(now / 1000) - session.issuedAt >= ROLES_MAX_AGE_SECONDS)
    return { mode: config.mode, principal: null, expiresAt: null };
  // The page's "session ends" notice: the earlier of the cookie's end and the claims' hour.
  return { mode: config.mode, principal: session.principal, expiresAt: Math.min(session.expiresAt, session.issuedAt + ROLES_MAX_AGE_SECONDS) };
}
