// The sign-in flow behind app/auth/*: authorization code with PKCE through MSAL. What the callback needs to check
// the provider's answer (state, nonce, PKCE verifier) and where to go afterwards travels in a short-lived
// encrypted cookie, so no server-side store is needed and any console instance can finish a sign-in another
// one began. Each function takes a Request and returns the Response, so they are testable without Next.js.
import { randomBytes } from 'node:crypto';
import { CryptoProvider, type AuthenticationResult } from '@azure/msal-node';
import { z } from 'zod';
import { currentAuthConfig, type AuthConfig } from './config.ts';
import type { Principal } from './principal.ts';
import { printableName } from './printable.ts';
import { sealSession, sessionCookieName } from './session.ts';
import { openSealed, seal } from './sealed.ts';
import { msalClient } from './msal.ts';
import { discover } from './discovery.ts';
import { readCookie, secureCookies } from './authenticate.ts';
import { originProblem } from './hardening.ts';
import { log } from '../log.ts';

/** The in-flight sign-in: state, nonce, PKCE verifier and where to return. 10 minutes, cleared by the callback. */
export const SIGNIN_COOKIE = 'nimbus_signin';
/**
 * Its name on https: `__Host-`, so the browser takes it only with Secure, Path=/ and no Domain - from this host
 * alone. `__Secure-` (its name before) still let a sibling subdomain plant one with `Domain=`: an attacker who
 * began a sign-in here (a sealed transaction of their own) and took their code from the provider could set that
 * transaction in a victim's browser and send the victim to the callback with the attacker's code and state - the
 * victim signed in as the attacker (login CSRF). The price of Path=/: the transaction, a few hundred bytes, goes
 * with every request while a sign-in is under way. Plain http (loopback) has no prefix and keeps Path=/auth.
 */
export const SECURE_SIGNIN_COOKIE = '__Host-nimbus_signin';
const signinCookieName = (secure: boolean) => (secure ? SECURE_SIGNIN_COOKIE : SIGNIN_COOKIE);
const signinCookiePath = (secure: boolean) => (secure ? '/' : '/auth');
const SIGNIN_PURPOSE = 'nimbus-console sign-in transaction v1';
const SIGNIN_SECONDS = 600;
/** Browsers drop cookies over 4096 bytes; leave room for the name and attributes. */
const MAX_SESSION_COOKIE_BYTES = 3800;
const SCOPES = ['openid', 'profile', 'email'];

type EnabledConfig = Extract<AuthConfig, { mode: 'entra' | 'oidc' }>;

const transactionSchema = z.object({
  state: z.string().min(16),
  nonce: z.string().min(16),
  verifier: z.string().min(43),
  returnTo: z.string(),
  exp: z.number().int(),
});

/**
 * A same-origin path to return to after sign-in; anything else (absolute, protocol-relative, odd) becomes `/`.
 * Characters outside printable ASCII are percent-encoded: the path ends up in a Location header, and a header
 * value with such a character makes the Response constructor throw (a 500 on the sign-in page).
 */
export function safeReturnTo(value: string | null | undefined): string {
  if (!value || value.length > 2000) return '/';
  // One leading slash, not `//host` or `/\host` (browsers treat both as another origin), no control characters.
  if (!/^\/(?![/\\])/.test(value) || [...value].some((c) => c < ' ' || c === '\u007f')) return '/';
  if (value.startsWith('/auth/')) return '/';
  let encoded = '';
  for (const c of value) {
    if (c > ' ' && c < '\u007f') encoded += c;
    else if (/\p{Surrogate}/u.test(c)) return '/'; // a lone surrogate has no UTF-8 form
    else encoded += encodeURIComponent(c);
  }
  return encoded.length > 4000 ? '/' : encoded;
}

export interface CookieOptions {
  maxAgeSeconds: number;
  path: string;
  secure: boolean;
}

export function serializeCookie(name: string, value: string, o: CookieOptions): string {
  return [
    `${name}=${value}`,
    `Path=${o.path}`,
    `Max-Age=${Math.max(0, Math.floor(o.maxAgeSeconds))}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(o.secure ? ['Secure'] : []),
  ].join('; ');
}

function enabledConfig(): EnabledConfig | null {
  const config = currentAuthConfig();
  return config.mode === 'off' ? null : config;
}

function redirect(location: string, cookies: string[] = []): Response {
  const headers = new Headers({ location, 'cache-control': 'no-store' });
  for (const c of cookies) headers.append('set-cookie', c);
  return new Response(null, { status: 303, headers });
}

const FAILURES = {
  state: 'The sign-in took too long or was started in another window. Please sign in again.',
  provider: 'The identity provider did not sign you in.',
  exchange: 'The console could not complete the sign-in with the identity provider.',
  claims: 'The identity provider\u2019s answer did not name a user the console can accept.',
  large: 'Your account carries too many group claims to fit in a session; ask an administrator to use app roles or groups assigned to the application.',
} as const;

/** A small page with a fixed message (never text from the request) and a way to try again. */
function failure(reason: keyof typeof FAILURES, status: number, clearSignin: EnabledConfig): Response {
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in failed - NimBus Console</title></head><body><h1>Sign-in failed</h1><p>${FAILURES[reason]}</p><p><a href="/auth/signin">Sign in again</a></p></body></html>`;
  const headers = new Headers({ 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  const secure = secureCookies(clearSignin);
  headers.append('set-cookie', serializeCookie(signinCookieName(secure), '', { maxAgeSeconds: 0, path: signinCookiePath(secure), secure }));
  return new Response(body, { status, headers });
}

/** GET /auth/signin?returnTo=/path: off to the provider's authorize endpoint. */
export async function beginSignIn(request: Request): Promise<Response> {
  const config = enabledConfig();
  const returnTo = safeReturnTo(new URL(request.url).searchParams.get('returnTo'));
  if (!config) return redirect(returnTo);
  const crypto = new CryptoProvider();
  const pkce = await crypto.generatePkceCodes();
  const state = randomBytes(24).toString('base64url');
  const nonce = randomBytes(24).toString('base64url');
  const url = await msalClient(config.mode, config.provider).getAuthCodeUrl({
    scopes: SCOPES,
    redirectUri: config.provider.redirectUri,
    codeChallenge: pkce.challenge,
    codeChallengeMethod: 'S256',
    state,
    nonce,
  });
  const exp = Math.floor(Date.now() / 1000) + SIGNIN_SECONDS;
  const transaction = seal({ state, nonce, verifier: pkce.verifier, returnTo, exp }, config.session.secret, SIGNIN_PURPOSE);
  const secure = secureCookies(config);
  return redirect(url, [serializeCookie(signinCookieName(secure), transaction, { maxAgeSeconds: SIGNIN_SECONDS, path: signinCookiePath(secure), secure })]);
}

/** The user named by the id token's claims; null when it names nobody. */
export function principalFromIdClaims(claims: Record<string, unknown>): Principal | null {
  const str = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v : undefined);
  const list = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const id = str(claims.oid) ?? str(claims.sub);
  if (!id) return null;
  return {
    kind: 'user',
    id,
    // Shown in trails and the audit log: no control or bidirectional-override characters (grants.ts printableName).
    name: printableName(str(claims.preferred_username) ?? str(claims.email) ?? str(claims.name) ?? id),
    roles: list(claims.roles),
    groups: list(claims.groups),
  };
}

/** GET /auth/callback?code&state: exchanges the code, checks the id token's nonce and sets the session cookie. */
export async function completeSignIn(request: Request): Promise<Response> {
  const config = enabledConfig();
  if (!config) return redirect('/');
  const params = new URL(request.url).searchParams;
  const sealed = readCookie(request.headers.get('cookie'), signinCookieName(secureCookies(config)));
  const tx = transactionSchema.safeParse(sealed ? openSealed(sealed, config.session.secret, SIGNIN_PURPOSE) : undefined);
  if (!tx.success || tx.data.exp <= Date.now() / 1000 || params.get('state') !== tx.data.state) {
    log.info({ reason: tx.success ? 'state mismatch or expired' : 'no sign-in in progress' }, 'sign-in refused');
    return failure('state', 400, config);
  }
  const providerError = params.get('error');
  const code = params.get('code');
  if (providerError || !code) {
    // The provider's error code is a fixed vocabulary (access_denied, …); its description is not logged.
    log.info({ error: (providerError ?? 'no code').slice(0, 64) }, 'sign-in refused by the provider');
    return failure('provider', 401, config);
  }
  const client = msalClient(config.mode, config.provider);
  let result: AuthenticationResult;
  try {
    result = await client.acquireTokenByCode(
      // MSAL checks state and the id token's nonce itself when given both (the confidential client reads the
      // nonce from the request, not the payload); the checks below repeat them on purpose.
      { code, scopes: SCOPES, redirectUri: config.provider.redirectUri, codeVerifier: tx.data.verifier, state: tx.data.state, nonce: tx.data.nonce },
      { code, state: tx.data.state },
    );
  } catch (err) {
    log.warn({ reason: err instanceof Error ? `${err.name}: ${err.message.split('\n')[0]}` : 'unknown' }, 'sign-in code exchange failed');
    return failure('exchange', 502, config);
  }
  // MSAL needs nothing kept: the session cookie is the console's only record of the user.
  if (result.account) await client.getTokenCache().removeAccount(result.account).catch(() => undefined);
  const claims = (result.idTokenClaims ?? {}) as Record<string, unknown>;
  const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  // Entra's discovery names the tenant by id, also when it is configured by domain name.
  const issuers = config.mode === 'entra' ? [config.provider.issuer, (await discover(config.provider)).issuer] : [config.provider.issuer];
  const issuerOk = typeof claims.iss === 'string' && issuers.includes(claims.iss);
  const principal = principalFromIdClaims(claims);
  if (claims.nonce !== tx.data.nonce || !audience.includes(config.provider.clientId) || !issuerOk || !principal) {
    log.warn({ nonce: claims.nonce === tx.data.nonce, audience: audience.includes(config.provider.clientId), issuer: issuerOk }, 'sign-in refused: id token does not match the request');
    return failure('claims', 401, config);
  }
  const session = sealSession(principal, config.session);
  if (session.length > MAX_SESSION_COOKIE_BYTES) return failure('large', 400, config);
  const secure = secureCookies(config);
  log.info({ user: principal.id }, 'signed in');
  return redirect(tx.data.returnTo, [
    serializeCookie(sessionCookieName(secure), session, { maxAgeSeconds: config.session.maxAgeSeconds, path: '/', secure }),
    serializeCookie(signinCookieName(secure), '', { maxAgeSeconds: 0, path: signinCookiePath(secure), secure }),
  ]);
}

/**
 * POST /auth/signout: clears the session and ends the provider's session when it has an end-session endpoint.
 * Refused (403) when another site sent it: a foreign page's auto-submitted form is a top-level navigation, so
 * its answer's Set-Cookie would apply even though SameSite=Lax keeps the session cookie from being sent.
 */
export async function signOut(request: Request): Promise<Response> {
  const problem = originProblem(request);
  if (problem !== null) {
    log.info({ reason: problem }, 'sign-out refused');
    const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-out refused - NimBus Console</title></head><body><h1>Sign-out refused</h1><p>The sign-out request came from another site. Use the Sign out button in the console.</p><p><a href="/">Back to the console</a></p></body></html>`;
    return new Response(body, { status: 403, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } });
  }
  const config = enabledConfig();
  if (!config) return redirect('/');
  const secure = secureCookies(config);
  const clear = serializeCookie(sessionCookieName(secure), '', { maxAgeSeconds: 0, path: '/', secure });
  const home = new URL('/', config.provider.redirectUri).toString();
  let location = home;
  try {
    const endSession = (await discover(config.provider)).end_session_endpoint;
    if (endSession) {
      const url = new URL(endSession);
      url.searchParams.set('client_id', config.provider.clientId);
      url.searchParams.set('post_logout_redirect_uri', home);
      location = url.toString();
    }
  } catch (err) {
    // Signed out of the console either way; the provider's own session just outlives it.
    log.warn({ reason: err instanceof Error ? err.message : String(err) }, 'sign-out: provider discovery failed');
  }
  if (location === home) return redirect(home, [clear]);
  // Not a redirect: the page's CSP has `form-action 'self'`, which browsers also apply to redirects that follow a
  // form submission, so a 303 from this POST to the provider would be blocked. A page that moves on by itself is
  // a new navigation.
  const href = escapeHtml(location);
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${href}"><title>Signed out - NimBus Console</title></head><body><p>You are signed out of the console. <a href="${href}">Continue to sign out of the identity provider</a>.</p></body></html>`;
  const headers = new Headers({ 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  headers.append('set-cookie', clear);
  return new Response(body, { status: 200, headers });
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
