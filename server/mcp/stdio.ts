// `npm run mcp`: the MCP server on stdio, for assistants that start their tools as a local process. It is a bridge
// to the console's /api/mcp, not a second server: it holds no Cosmos or Service Bus credentials, and every tool
// call is authorized by the console for the identity of NIMBUS_MCP_TOKEN (a bearer token; with sign-in off none,
// and the console must be on this machine). The tool list is the console's for that identity.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { MCP_SERVER_NAME } from './tools.ts';
import { SDK_VERSION } from '@nimbus/sdk';

export interface StdioBridgeOptions {
  /** The console's base URL (NIMBUS_MCP_CONSOLE_URL, default http://127.0.0.1:3000). https, or http on loopback. */
  consoleUrl: string;
  /** A bearer token for the console (NIMBUS_MCP_TOKEN); absent with sign-in off. */
  token?: string;
}

export function consoleMcpUrl(consoleUrl: string): URL {
  const base = new URL(consoleUrl);
  const loopback = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i.test(base.hostname);
  if (base.protocol !== 'https:' && !(base.protocol === 'http:' && loopback))
    throw new Error(`NIMBUS_MCP_CONSOLE_URL must be https (plain http only on loopback), got ${base.protocol}//${base.host}`);
  return new URL('api/mcp', base.href.endsWith('/') ? base : new URL(`${base.href}/`));
}

/** Connects to the console and serves its tools on this process's stdin/stdout until stdin closes. */
export async function runStdioBridge(options: StdioBridgeOptions): Promise<void> {
  const upstream = new Client({ name: `${MCP_SERVER_NAME}-stdio`, version: SDK_VERSION });
  const headers: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
  await upstream.connect(new StreamableHTTPClientTransport(consoleMcpUrl(options.consoleUrl), { requestInit: { headers, redirect: 'error' } }));
  const server = new Server(
    { name: MCP_SERVER_NAME, version: SDK_VERSION },
    { capabilities: { tools: {} }, instructions: upstream.getInstructions() },
  );
  server.setRequestHandler(ListToolsRequestSchema, (request) => upstream.listTools(request.params));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => upstream.callTool(request.params, undefined, { signal: extra.signal }));
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
  await server.connect(transport);
  await closed;
  await upstream.close().catch(() => undefined);
}
