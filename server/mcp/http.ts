// The MCP server over Streamable HTTP at /api/mcp: stateless (no MCP session; every POST carries one JSON-RPC
// message or batch and gets its answer as JSON), so any console instance can answer any call and nothing is kept
// between calls. The caller is identified like every console request (session cookie or bearer token; with
// sign-in off, loopback only) and every tool call is authorized on its own (tools.ts).
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { z } from 'zod';
import { identify } from '../auth/authorize.ts';
import { readJsonBody } from '../http.ts';
import { createMcpServer } from './tools.ts';

/**
 * Most JSON-RPC messages one POST may carry (the SDK's transport allows 100). A batch's tool calls run at once, each
 * counted against the caller's call limit (tools.ts); the cap keeps one request from starting a hundred store
 * queries before the limit has a say.
 */
export const MAX_MCP_BATCH = 20;

export async function handleMcpPost(request: Request): Promise<Response> {
  const who = await identify(request, 'mcp');
  // Read here, within the console's body limit, rather than by the transport without one.
  const body = await readJsonBody(request, z.unknown());
  if (Array.isArray(body) && body.length > MAX_MCP_BATCH)
    return Response.json(
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: `Invalid Request: a batch carries at most ${MAX_MCP_BATCH} messages (this one ${body.length})` } },
      { status: 400, headers: { 'cache-control': 'no-store' } },
    );
  const server = createMcpServer(request, who);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request, { parsedBody: body });
  } finally {
    await server.close().catch(() => undefined);
  }
}
