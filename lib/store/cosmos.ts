// Connecting to Cosmos DB: a real account, or the embedded @vercel/cosmosdb-server on loopback.
//
// The embedded server is started over plain HTTP (research-spike.md A): with HTTP the SDK uses its own
// keep-alive agent and marks the request as allowed-insecure, so no certificate has to be trusted or
// verification switched off, it measured as fast as HTTPS with keep-alive, and a test can put a plain HTTP
// fault proxy in front of it. The SDK refuses a custom agent for http:// URLs, so none is passed.
import { createHttpServer } from '@vercel/cosmosdb-server';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { installEmbeddedQueryFixes, refuseQueryPlanRequests, refuseUnreadableContinuations } from './embeddedQueries.ts';
import { EmbeddedJournal, type JournalRecovery, type JournalWrite } from './embeddedJournal.ts';
import { installHierarchicalKeyFix } from './embeddedHierarchicalKeys.ts';
import { installPatchConditionFix } from './embeddedPatchConditions.ts';
import { isLoopbackHostHeader } from '../net/loopback.ts';

// The client side lives in its own module so that code which only connects (the SDK's durable inbox) does not load
// the embedded server; re-exported here for the store's existing importers.
export { cosmosConnectionSchema, createCosmosClient, type CosmosConnection } from '@nimbus/sdk/cosmos';

export interface EmbeddedCosmos {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  /** Any base64 string works for the embedded server; this one is fixed and is not a secret. */
  key: string;
  port: number;
  /** With a data folder: what the start restored (and whether it cut off a damaged journal tail). */
  recovery?: JournalRecovery;
  /**
   * Stops the server; with a data folder, writes the snapshot. Rejects when the snapshot could not be written (a
   * full disk): the stop was not clean, and the journal, kept, is replayed by the next start.
   */
  close(): Promise<void>;
}

/** A well-known dummy key: the embedded server checks no signature. */
export const EMBEDDED_COSMOS_KEY = Buffer.from('nimbus-embedded-cosmos-key').toString('base64');

/**
 * Starts the Cosmos-compatible server on 127.0.0.1 (port 0 = ephemeral). With `dataDir`, every acknowledged write
 * is journaled there and the data is back, before the first request is answered, when it starts again on the same
 * folder (embeddedJournal.ts); without it, memory only. Rejects, naming the folder, when the folder cannot be
 * restored (unreadable, read-only, a damaged snapshot).
 */
export async function startEmbeddedCosmos(
  options: {
    port?: number;
    host?: string;
    dataDir?: string;
    compactAfterBytes?: number;
    /** Tests only: the write the journal and snapshot go through, to simulate a short write or a full disk. */
    journalWrite?: JournalWrite;
  } = {},
): Promise<EmbeddedCosmos> {
  // Linear, partition-scoped queries instead of quadratic full scans (embeddedQueries.ts; results unchanged).
  installEmbeddedQueryFixes();
  // A hierarchical key's whole value plus the id identifies a document, as on Cosmos (embeddedHierarchicalKeys.ts).
  installHierarchicalKeyFix();
  // A conditional patch is decided by the addressed document alone, as on Cosmos (embeddedPatchConditions.ts).
  installPatchConditionFix();
  const host = options.host ?? '127.0.0.1';
  // keepAlive: the server's default answers `connection: close`, which made every request open a new
  // connection (5x slower in the spike). The option is passed through to http.createServer.
  const server: Server = createHttpServer({ keepAlive: true });
  // No idle timeout on kept-alive connections. Node closes an idle one after 5 s by default, while @azure/cosmos's
  // agent keeps its idle sockets without a limit and reuses them: a request written just as the server closes its
  // socket fails with ECONNRESET, which the client does not retry for a write (seen as "store connection failed
  // (ECONNRESET) during audit write" on a loaded machine). Only loopback clients reach this server, and close()
  // drops every connection.
  server.keepAliveTimeout = 0;
  refuseQueryPlanRequests(server);
  // A continuation it did not issue is a 400, as on Cosmos, not a query started over (embeddedQueries.ts).
  refuseUnreadableContinuations(server);
  const journal =
    options.dataDir === undefined
      ? undefined
      : EmbeddedJournal.attach(server, {
          dir: options.dataDir,
          ...(options.compactAfterBytes !== undefined ? { compactAfterBytes: options.compactAfterBytes } : {}),
          ...(options.journalWrite !== undefined ? { write: options.journalWrite } : {}),
        });
  // Outermost: a refused caller never reaches the server (nor its journal).
  refuseForeignCallers(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  if (journal?.failure) {
    // The recovery ran in the 'listening' listener (the server creates its account there); checked before this
    // function returns, so no request has been served. The caller's "did not start" path runs.
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw journal.failure;
  }
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://${host}:${port}`,
    key: EMBEDDED_COSMOS_KEY,
    port,
    ...(journal?.recovery ? { recovery: journal.recovery } : {}),
    close: () =>
      new Promise<void>((resolve, reject) => {
        // Keep-alive sockets would hold close() open until they time out; drop them.
        server.closeAllConnections();
        server.close(() => {
          // After the last request: a compacted snapshot makes the next start one file read.
          try {
            journal?.close();
            resolve();
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)));
          }
        });
      }),
  };
}

/**
 * The embedded server checks no key (EMBEDDED_COSMOS_KEY is public) and holds every payload, so its only
 * protection is that nothing but this machine's processes reach it. Listening on 127.0.0.1 does not stop a web
 * page: through DNS rebinding (`attacker.test` resolving to 127.0.0.1) the browser sends it requests as if
 * same-origin, and a local reverse proxy relays other machines' requests. The server itself cannot refuse
 * those, so this front does, before the server sees the request: the Host must be a loopback name or address
 * (421 otherwise), and nothing a proxy (`Forwarded`, `X-Forwarded-*`) or a browser (`Origin`, `Sec-Fetch-Site`)
 * adds may be present (403): the @azure/cosmos client sends none of them.
 */
export function refuseForeignCallers(server: Server): void {
  const handlers = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const problem = foreignCallerProblem(req);
    if (problem !== null) {
      req.resume();
      res.writeHead(problem.status, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify({ code: problem.status === 421 ? 'MisdirectedRequest' : 'Forbidden', message: problem.message }));
      return;
    }
    for (const handler of handlers) handler.call(server, req, res);
  });
}

function foreignCallerProblem(req: IncomingMessage): { status: 421 | 403; message: string } | null {
  if (!isLoopbackHostHeader(req.headers.host))
    return { status: 421, message: 'the embedded Cosmos server answers only requests addressed to 127.0.0.1 or localhost' };
  const name = Object.keys(req.headers).find(
    // Sec-Fetch-Site, not every Sec-Fetch-*: Node's own fetch sends Sec-Fetch-Mode too, and is a fine client.
    (h) => h === 'forwarded' || h.startsWith('x-forwarded-') || h === 'origin' || h === 'sec-fetch-site',
  );
  if (name !== undefined)
    return { status: 403, message: `the embedded Cosmos server answers only this machine's own clients directly (refused: ${name} header)` };
  return null;
}
