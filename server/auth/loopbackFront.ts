// The launcher's first look at every request while sign-in is off (server/console.ts): the Node server sees the
// request exactly as it arrived, before Next.js adds its own `x-forwarded-*` headers, so here any forwarding
// header refuses (loopbackProblem's strict mode). proxy.ts and authorize() check again inside Next.js, for
// `next start`, which does not go through this launcher.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { loopbackProblem } from './hardening.ts';

/** Answers (421/403, one line) and returns true when the request is not a direct one to a loopback name. */
export function refuseUnlessLoopback(req: IncomingMessage, res: ServerResponse): boolean {
  const refused = loopbackProblem(req.headers, 'strict');
  if (refused === null) return false;
  req.resume();
  const api = (req.url ?? '').startsWith('/api/');
  res.writeHead(refused.status, {
    'content-type': api ? 'application/json' : 'text/plain; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'close',
  });
  res.end(api ? JSON.stringify({ error: 'misdirected request', detail: refused.detail }) : `${refused.detail}\n`);
  return true;
}
