// A loopback HTTP server in front of the console's real handoff route handlers, so the agent-side HTTP client is
// tested over real sockets with the real fetch, without building the Next.js app. It does what Next does for these
// routes: match the path, decode the params, hand the handler a web Request and write back its Response.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type RouteModule = { POST(request: Request, context: { params: Promise<Record<string, string>> }): Promise<Response> };

const ROUTES: Array<{ pattern: RegExp; load: () => Promise<RouteModule> }> = [
  {
    pattern: /^\/api\/event\/handoff\/complete\/(?<endpointId>[^/]+)\/(?<eventId>[^/]+)\/(?<messageId>[^/]+)$/,
    load: async () => (await import('../../../app/api/event/handoff/complete/[endpointId]/[eventId]/[messageId]/route.ts')) as unknown as RouteModule,
  },
  {
    pattern: /^\/api\/event\/handoff\/fail\/(?<endpointId>[^/]+)\/(?<eventId>[^/]+)\/(?<messageId>[^/]+)$/,
    load: async () => (await import('../../../app/api/event/handoff/fail/[endpointId]/[eventId]/[messageId]/route.ts')) as unknown as RouteModule,
  },
];

export interface ConsoleRouteServer {
  url: string;
  close(): Promise<void>;
}

async function serve(req: IncomingMessage, res: ServerResponse, origin: string): Promise<void> {
  const url = new URL(req.url ?? '/', origin);
  const route = ROUTES.map((r) => ({ r, m: r.pattern.exec(url.pathname) })).find((x) => x.m);
  if (!route || req.method !== 'POST') {
    res.writeHead(404).end();
    return;
  }
  const params = Object.fromEntries(Object.entries(route.m!.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)]));
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
  const request = new Request(url, { method: 'POST', headers, body: Buffer.concat(chunks) });
  const module = await route.r.load();
  const response = await module.POST(request, { params: Promise.resolve(params) });
  res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
  res.end(Buffer.from(await response.arrayBuffer()));
}

export async function startConsoleRouteServer(): Promise<ConsoleRouteServer> {
  let origin = '';
  const server: Server = createServer((req, res) => {
    serve(req, res, origin).catch(() => {
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
