// The paint floor for the console bench's "navigation → counts painted" figures: a page with one table cell and
// nothing else (no stylesheet, no script), answered with the console's own response headers, from a plain Node
// server on loopback. Loaded in a new tab the same way as the Endpoints page, it measures what no page can go
// below on this machine and browser: the tab's navigation, the renderer process that the console's
// Cross-Origin-Opener-Policy makes Chromium start for it (a new browsing context group: the tab's about:blank
// renderer cannot be reused), and one paint. The console's figure is reported against it, as a ratio.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const FLOOR_HTML =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>paint floor</title></head>' +
  '<body><table><tbody><tr><td elementtiming="endpoint-counts">12,345 failed</td></tr></tbody></table></body></html>';

// Headers that describe a particular response, not the console's policy: not copied.
const PER_RESPONSE = new Set(['content-length', 'transfer-encoding', 'date', 'connection', 'keep-alive', 'vary', 'link', 'content-encoding', 'etag']);

export interface FloorPage {
  url: string;
  /** The headers the floor page answers with (the console page's, minus per-response ones). */
  headers: Record<string, string>;
  close(): Promise<void>;
}

/** Serves the floor page with the headers the console answers `consolePage` with. */
export async function startFloorPage(consolePage: string): Promise<FloorPage> {
  const res = await fetch(consolePage);
  await res.text();
  if (!res.ok) throw new Error(`GET ${consolePage}: ${res.status}`);
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!PER_RESPONSE.has(name)) headers[name] = value;
  });
  const server = createServer((_req, out) => {
    out.writeHead(200, headers);
    out.end(FLOOR_HTML);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    headers,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A page of another site (the same loopback server named `localhost`, while the console is at 127.0.0.1: another
 * site to the browser): the tab an operator follows a link from, or types the console's address into. Leaving it for
 * the console is a cross-site navigation, which needs a new renderer process with or without the console's
 * Cross-Origin-Opener-Policy - unlike a new Playwright tab's about:blank, which Chromium reuses for a page without COOP.
 */
export async function startOtherSite(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((_req, out) => {
    out.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    out.end('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>another site</title></head><body><p>another site</p></body></html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://localhost:${(server.address() as AddressInfo).port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
