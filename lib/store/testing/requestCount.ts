// Counting the document requests the embedded Cosmos server (in this process) receives: how tests show that a
// path goes in bulk requests rather than one request per row.
import http from 'node:http';

/**
 * Document requests the embedded server receives while `fn` runs, as `METHOD container` plus ` bulk` for a bulk
 * request (a query is a POST too). The client's one-off reads of a container's definition and partition key
 * ranges are not counted.
 */
export async function requestsDuring<T>(fn: () => Promise<T>): Promise<{ value: T; requests: string[] }> {
  const requests: string[] = [];
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (this: http.Server, event: string, ...args: unknown[]) {
    const req = args[0] as http.IncomingMessage;
    if (event === 'request' && /\/docs(\/|$)/.test(req.url ?? '')) {
      const coll = /\/colls\/([^/]+)/.exec(req.url ?? '')?.[1] ?? '-';
      requests.push(`${req.method} ${coll}${req.headers['x-ms-cosmos-is-batch-request'] ? ' bulk' : ''}`);
    }
    return emit.apply(this, [event, ...args] as Parameters<typeof emit>);
  } as typeof emit;
  try {
    return { value: await fn(), requests };
  } finally {
    http.Server.prototype.emit = emit;
  }
}

/** How many of `requests` are exactly `what`. */
export const count = (requests: string[], what: string): number => requests.filter((r) => r === what).length;
