// Resolves a request to the calling Principal: with NIMBUS_AUTH=off everybody is the anonymous principal (the
// console then only listens on loopback); otherwise the session cookie names a signed-in user and an
// `Authorization: Bearer` token names a service principal. Which principals may do what is authorization's call.
import { ANONYMOUS, type Principal } from './principal.ts';
import { currentAuthConfig, type AuthConfig } from './config.ts';
import { SESSION_COOKIE, openSessionWithExpiry } from './session.ts';
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
  return sessionOf(readCookie(request.headers.get('cookie'), SESSION_COOKIE), config).principal;
}

export interface SessionView {
  mode: AuthConfig['mode'];
  /** ANONYMOUS with sign-in off; null when sign-in is on and nobody is signed in (or the session expired). */
  principal: Principal | null;
  /** When the session ends (seconds since epoch); null with sign-in off or nobody signed in. */
  expiresAt: number | null;
}

/**
 * The one reader of the session cookie's value: requests pass it from their Cookie header, pages and layouts
 * from next/headers. Decrypts it once for both the principal and the session's end.
 */
export function sessionOf(cookieValue: string | null | undefined, config: AuthConfig = currentAuthConfig()): SessionView {
  if (config.mode === 'off') return { mode: 'off', principal: ANONYMOUS, expiresAt: null };
  const session = openSessionWithExpiry(cookieValue, { secret: config.session.secret });
  return { mode: config.mode, principal: session?.principal ?? null, expiresAt: session?.expiresAt ?? null };
}
