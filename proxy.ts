// Next.js 16 proxy (formerly middleware), run before every page and API route: per-request CSP nonce for pages,
// a locked-down CSP for API answers, JSON 404/405 for unknown API paths and methods (server/apiRoutes.ts), the
// body-size limit of mutating API calls and, with sign-in off, the refusal of every request not addressed to this
// machine directly (DNS rebinding, reverse proxies). Authorization
// is not done here: every route handler authorizes itself (server/auth/authorize.ts), so a matcher change cannot
// open one; authorize() repeats the loopback check for the same reason.
import { NextResponse, type NextRequest } from 'next/server';
import { matchApiRoute } from './server/apiRoutes.ts';
import { API_CSP, authMode, bodyTooLarge, hsts, loopbackProblem, newNonce, pageCsp } from './server/auth/hardening.ts';

export function proxy(request: NextRequest): NextResponse {
  const response = answer(request);
  const transportSecurity = hsts(request);
  if (transportSecurity !== null) response.headers.set('Strict-Transport-Security', transportSecurity);
  return response;
}

function answer(request: NextRequest): NextResponse {
  const { pathname } = request.nextUrl;
  if (authMode() === 'off') {
    const refused = loopbackProblem(request.headers, 'nextInternal', request.nextUrl.host);
    if (refused !== null) {
      const response = pathname.startsWith('/api/')
        ? NextResponse.json({ error: 'misdirected request', detail: refused.detail }, { status: refused.status })
        : new NextResponse(`${refused.detail}\n`, { status: refused.status, headers: { 'content-type': 'text/plain; charset=utf-8' } });
      response.headers.set('Content-Security-Policy', API_CSP);
      response.headers.set('Cache-Control', 'no-store');
      return response;
    }
  }
  if (pathname.startsWith('/api/')) {
    const tooLarge = bodyTooLarge(request.method, request.headers.get('content-length'));
    if (tooLarge !== null) {
      const refused = NextResponse.json({ error: 'payload too large', detail: tooLarge }, { status: 413 });
      refused.headers.set('Content-Security-Policy', API_CSP);
      refused.headers.set('Cache-Control', 'no-store');
      return refused;
    }
    // Next.js would answer an unknown API path with the HTML 404 page and a missing method with an empty 405:
    // API clients get JSON errors only.
    const route = matchApiRoute(pathname.replace(/\/+$/, ''), request.method);
    if (route.kind !== 'found') {
      const refused =
        route.kind === 'unknown'
          ? NextResponse.json({ error: 'not found', detail: `no API route ${pathname.slice(0, 200)}` }, { status: 404 })
          : NextResponse.json(
              { error: 'method not allowed', detail: `${pathname.slice(0, 200)} answers ${route.allow.join(', ')}, not ${request.method}` },
              { status: 405, headers: { allow: route.allow.join(', ') } },
            );
      refused.headers.set('Content-Security-Policy', API_CSP);
      refused.headers.set('Cache-Control', 'no-store');
      return refused;
    }
    const response = NextResponse.next();
    response.headers.set('Content-Security-Policy', API_CSP);
    return response;
  }
  const nonce = newNonce();
  const csp = pageCsp(nonce, process.env.NODE_ENV === 'development');
  // Next.js takes the nonce for its own script tags from the request's CSP header.
  const headers = new Headers(request.headers);
  headers.set('Content-Security-Policy', csp);
  headers.set('x-nonce', nonce);
  const response = NextResponse.next({ request: { headers } });
  response.headers.set('Content-Security-Policy', csp);
  return response;
}

export const config = {
  matcher: ['/((?!_next/static|_next/image|favicon.ico|icon.svg).*)'],
};
