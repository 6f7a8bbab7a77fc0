// POST /api/mcp: the MCP server (Streamable HTTP, stateless, JSON answers; docs/agents.md). Any console role, or
// the Agent role; each tool call is then authorized like the route it stands for. GET (a server-sent event stream)
// is not offered: Next answers 405, which MCP clients take as "no stream".
import { handleMcpPost } from '../../../server/mcp/http.ts';
import { handle } from '../../../server/http.ts';

export const dynamic = 'force-dynamic';

export function POST(request: Request): Promise<Response> {
  return handle(() => handleMcpPost(request));
}
