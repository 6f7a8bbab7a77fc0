// Response hardening applied by proxy.ts to every request it sees: a Content-Security-Policy with a fresh nonce
// per request (Next.js reads the nonce from the request's CSP header and puts it on its own scripts, so no
// inline script runs without it), and a body-size limit on mutating API calls checked from Content-Length before
// the route reads anything. The headers that never vary (nosniff, referrer policy, framing) are in
// next.config.ts so they reach static files too. Also the same-origin check that authorize() applies to every
// mutation and signOut to sign-out. Pure functions: tested without a server.
import { hostNameOf, isLoopbackName } from '../../lib/net/loopback.ts';

export { hostNameOf, isLoopbackName } from '../../lib/net/loopback.ts';

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

/**
 * HSTS when the console is served over https: its public address (NIMBUS_AUTH_REDIRECT_URI) is https, or the
 * request came over https (directly or through a TLS front). Browsers then refuse plain http to this host for a
 * year, so nobody on the network path can strip TLS from a later visit and read the session cookie or inject a
 * page. Never on plain http (browsers ignore it there, and loopback trials must keep working).
 */
export function hsts(request: Request, env: Record<string, string | undefined> = process.env): string | null {
  const proto = request.headers.get('x-forwarded-proto')?.split(',')[0]!.trim().toLowerCase();
  let https = proto === 'https' || new URL(request.url).protocol === 'https:';
  if (!https && authMode(env) !== 'off' && env.NIMBUS_AUTH_REDIRECT_URI) {
    try {
      https = new URL(env.NIMBUS_AUTH_REDIRECT_URI).protocol === 'https:';
    } catch {
      // A bad redirect URI is configuration's to report.
    }
  }
  return https ? 'max-age=31536000' : null;
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
  // An origin is scheme and host: http://console.example (a page anyone on the network path can forge) is not
  // https://console.example. The console's own scheme is what it was reached by (a TLS front says so in
  // X-Forwarded-Proto; Next.js fills it in from the socket otherwise).
  const first = (v: string | null) => (v === null ? null : v.split(',')[0]!.trim().toLowerCase());
  const url = new URL(request.url);
  const host = first(request.headers.get('x-forwarded-host')) ?? first(request.headers.get('host')) ?? url.host;
  const scheme = first(request.headers.get('x-forwarded-proto')) ?? url.protocol.replace(/:$/, '');
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return `cross-origin request refused (Origin: ${origin.slice(0, 100)})`;
  }
  if (origin === 'null' || parsed.host.toLowerCase() !== host || parsed.protocol !== `${scheme}:`)
    return `cross-origin request refused (Origin: ${origin.slice(0, 100)})`;
  return null;
}

// ---------------------------------------------------------------- sign-in off: loopback callers only

/** NIMBUS_AUTH, `off` when unset. Here (not in config.ts) so that proxy.ts can ask without loading sign-in. */
export function authMode(env: Record<string, string | undefined> = process.env): string {
  return env.NIMBUS_AUTH == null || env.NIMBUS_AUTH === '' ? 'off' : env.NIMBUS_AUTH;
}

export interface LoopbackRefusal {
  /** 421 Misdirected Request for a foreign Host, 403 for a request relayed by a proxy. */
  status: 421 | 403;
  detail: string;
}

/** Reads one header from a fetch Headers or a Node IncomingHttpHeaders object. */
type AnyHeaders = Headers | Record<string, string | string[] | undefined>;
function headerNames(h: AnyHeaders): string[] {
  return h instanceof Headers ? [...h.keys()] : Object.keys(h).map((k) => k.toLowerCase());
}
function header(h: AnyHeaders, name: string): string | null {
  if (h instanceof Headers) return h.get(name);
  const v = h[name];
  return v === undefined ? null : Array.isArray(v) ? v.join(',') : v;
}

/**
 * With sign-in off, every caller is an Owner, so only this machine may be the caller. Binding to 127.0.0.1 is
 * not enough: a page on `attacker.test` whose name resolves to 127.0.0.1 (DNS rebinding) is same-origin with
 * the console in the browser's eyes, and a reverse proxy or tunnel on this machine relays other people's
 * requests from a loopback socket. What gives both away is the request itself: a rebinding page's requests carry
 * `Host: attacker.test`, and a proxy adds `Forwarded` / `X-Forwarded-*`.
 *
 * `strict` is for a server that sees the request as it arrived (the launcher's Node server, the embedded
 * Cosmos front): any forwarding header refuses. Inside Next.js (`nextInternal`), the framework itself fills in
 * `x-forwarded-host/-port/-proto/-for` from the socket before the proxy and the route handlers run, so there a
 * forwarding header refuses only when it says something Next.js would not have: another host, a non-loopback
 * client, https, or any other forwarding header (`Forwarded` always: Next.js never writes it) - judged on every
 * element of a comma-separated list.
 */
export function loopbackProblem(
  headers: AnyHeaders,
  mode: 'strict' | 'nextInternal' = 'strict',
  /** The request URL's host, for a fetch Request made without a Host header (a handler called in-process). */
  urlHost?: string,
): LoopbackRefusal | null {
  const host = header(headers, 'host') ?? urlHost ?? null;
  if (host === null || !isLoopbackName(hostNameOf(host)))
    return {
      status: 421,
      detail: `sign-in is off (NIMBUS_AUTH=off), so only http://127.0.0.1 or http://localhost on this machine may use the console; this request was addressed to ${host === null ? 'no host' : JSON.stringify(host.slice(0, 100))}`,
    };
  const relayed = (name: string) => ({
    status: 403 as const,
    detail: `sign-in is off (NIMBUS_AUTH=off), so the console answers only direct requests from this machine; this one came through a proxy (${name} header)`,
  });
  for (const name of headerNames(headers)) {
    if (name !== 'forwarded' && !name.startsWith('x-forwarded-')) continue;
    if (mode === 'strict' || name === 'forwarded') return relayed(name);
    // Every element, not only the first. Next.js fills a header in only when the request has none, so a list was
    // written by a proxy; and a proxy that appends (nginx's `$proxy_add_x_forwarded_for`, HAProxy's `option
    // forwardfor`) keeps what its client sent in front: a remote client that sends `X-Forwarded-For: 127.0.0.1`
    // arrives as `127.0.0.1, 203.0.113.7`. The first element is the one the remote client chose.
    const values = (header(headers, name) ?? '').split(',').map((v) => v.trim());
    if (name === 'x-forwarded-host' && values.every((v) => v.toLowerCase() === host.trim().toLowerCase())) continue;
    if (name === 'x-forwarded-for' && values.every((v) => isLoopbackName(v))) continue;
    if (name === 'x-forwarded-proto' && values.every((v) => v === 'http')) continue;
    // The port says nothing about who the client is (Next.js writes the port it listens on).
    if (name === 'x-forwarded-port') continue;
    return relayed(name);
  }
  return null;
}
