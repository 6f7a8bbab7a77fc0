// Response hardening applied by proxy.ts to every request it sees: a Content-Security-Policy with a fresh nonce
// per request (Next.js reads the nonce from the request's CSP header and puts it on its own scripts, so no
// inline script runs without it), and a body-size limit on mutating API calls checked from Content-Length before
// the route reads anything. The headers that never vary (nosniff, referrer policy, framing) are in
// next.config.ts so they reach static files too. Also the same-origin check that authorize() applies to every
// mutation and signOut to sign-out. Pure functions: tested without a server.

/** Mutating API calls with a larger declared body are refused with 413 before the route handler runs. */
export const MAX_BODY_BYTES = 1_000_000;

export const MUTATING_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** A 128-bit random nonce, base64. */
export function newNonce(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return btoa(String.fromCharCode(...bytes));
}

/**
 * The page policy. Scripts: only ours, by nonce ('strict-dynamic' lets those load their chunks); no inline or
 * eval in production. Styles keep 'unsafe-inline': React's style attributes need it, and styles cannot run code.
 */
export function pageCsp(nonce: string, dev = false): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ''}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** API answers are JSON: nothing in them may load or run anything, nor be framed. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'";

/** 413 detail for a declared body over the limit; null when the request may go on. */
export function bodyTooLarge(method: string, contentLength: string | null, limit = MAX_BODY_BYTES): string | null {
  if (!MUTATING_METHODS.has(method.toUpperCase()) || contentLength === null) return null;
  const n = Number(contentLength);
  if (!Number.isFinite(n) || n <= limit) return null;
  return `the body is ${n} bytes; at most ${limit} bytes are accepted`;
}

/**
 * Cookie-authenticated mutations must come from our own pages. Browsers send `Sec-Fetch-Site` (modern) and
 * `Origin` (every cross-origin or POST request): either naming another site refuses the call. A request with
 * neither is not from a browser (curl, a script), so it cannot be a cross-site forgery. Bearer-token callers
 * are exempt: a browser never attaches a bearer token on its own.
 */
export function originProblem(request: Request): string | null {
  const authorization = request.headers.get('authorization');
  if (authorization !== null && /^bearer\s/i.test(authorization)) return null;
  const site = request.headers.get('sec-fetch-site');
  if (site !== null && site !== 'same-origin') return `cross-site request refused (Sec-Fetch-Site: ${site.slice(0, 40)})`;
  const origin = request.headers.get('origin');
  if (origin === null) return null;
  const host = request.headers.get('x-forwarded-host') ?? request.headers.get('host') ?? new URL(request.url).host;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    return `cross-origin request refused (Origin: ${origin.slice(0, 100)})`;
  }
  if (origin === 'null' || originHost.toLowerCase() !== host.split(',')[0]!.trim().toLowerCase())
    return `cross-origin request refused (Origin: ${origin.slice(0, 100)})`;
  return null;
}
