// `npm run mcp`: the console's MCP tools on stdio (server/mcp/stdio.ts). Settings: NIMBUS_MCP_CONSOLE_URL (default
// http://127.0.0.1:3000), NIMBUS_MCP_TOKEN (a bearer token; not needed with sign-in off). Nothing but MCP goes to
// stdout: messages for people go to stderr.
import { runStdioBridge } from '../server/mcp/stdio.ts';

const consoleUrl = process.env.NIMBUS_MCP_CONSOLE_URL || 'http://127.0.0.1:3000';
runStdioBridge({ consoleUrl, ...(process.env.NIMBUS_MCP_TOKEN ? { token: process.env.NIMBUS_MCP_TOKEN } : {}) }).catch((err: unknown) => {
  process.stderr.write(`nimbus mcp: ${err instanceof Error ? err.message : String(err)} (console ${consoleUrl})\n`);
  process.exit(1);
});
