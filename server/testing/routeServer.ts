// A loopback HTTP server in front of the console's real route handlers (every app/api/**/route.ts), so clients
// (the SDK's AgentClient, an MCP client) are tested over real sockets with the real fetch, without building the
// Next.js app. It does what Next does for a route: match the path, decode the params, hand the handler a web
// Request (aborted when the client goes away, as long-polls need) and stream back its Response.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { CONSOLE_DIR } from '../console.ts';

type Handler = (request: Request, context: { params: Promise<Record<string, string>> }) => Promise<Response>;
interface Route {
  pattern: RegExp;
  file: string;
}

function routes(): Route[] {
  const root = join(CONSOLE_DIR, 'app', 'api');
  const out: Route[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name === 'route.ts') {
        const parts = relative(join(CONSOLE_DIR, 'app'), dir).split(sep);
        const source = parts.map((p) => (/^\[\w+\]$/.test(p) ? `(?<${p.slice(1, -1)}>[^/]+)` : p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
        out.push({ pattern: new RegExp(`^/${source}$`), file: full });
      }
    }
  };
  walk(root);
  // Literal segments before parameters: /api/event/skip before /api/event/skip/[endpointId]/...
  return out.sort((a, b) => a.pattern.source.split('(?<').length - b.pattern.source.split('(?<').length);
}

export interface RouteServer {
  url: string;
  close(): Promise<void>;
}

async function serve(table: Route[], req: IncomingMessage, res: ServerResponse, origin: string): Promise<void> {
  const url = new URL(req.url ?? '/', origin);
  const hit = table.map((r) => ({ r, m: r.pattern.exec(url.pathname) })).find((x) => x.m);
  const method = req.method ?? 'GET';
  const module = hit ? ((await import(pathToFileURL(hit.r.file).href)) as Record<string, Handler | undefined>) : undefined;
  const handler = module?.[method];
  if (!hit || !handler) {
    res.writeHead(hit ? 405 : 404).end();
    return;
  }
  const params = Object.fromEntries(Object.entries(hit.m!.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)]));
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
  const aborted = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) aborted.abort();
  });
  const request = new Request(url, {
    method,
    headers,
    body: method === 'GET' || method === 'HEAD' ? undefined : Buffer.concat(chunks),
    signal: aborted.signal,
  });
  const response = await handler(request, { params: Promise.resolve(params) });
  res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
  if (response.body) Readable.fromWeb(response.body as WebReadableStream).pipe(res);
  else res.end();
}

export async function startRouteServer(): Promise<RouteServer> {
  const table = routes();
  let origin = '';
  const server: Server = createServer((req, res) => {
    serve(table, req, res, origin).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: origin,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
