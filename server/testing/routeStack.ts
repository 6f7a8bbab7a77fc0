// For tests that call the console's route handlers in this process, as Next calls them, on the embedded stack
// (server/testing/stack.ts): the handlers find the stack through process.env and the console's shared context
// (server/context.ts), so starting means pointing the environment at it, and closing means closing that context
// before the servers it is connected to. `routeRequest` is the request such a test hands a handler.
import { startConsoleTestStack, type ConsoleTestStack } from './stack.ts';

export type { ConsoleTestStack };

/**
 * The embedded stack with the console's environment pointing at it (its own Cosmos database), for a file's
 * `before`; its close() also closes the console context the handlers opened on it.
 */
export async function startRouteTestStack(database: string): Promise<ConsoleTestStack> {
  const stack = await startConsoleTestStack(database);
  Object.assign(process.env, stack.env);
  return {
    ...stack,
    close: async () => {
      // Loaded only now, as the handlers load it: the console's modules read settings such as NIMBUS_LOG_LEVEL
      // when first loaded, and a test file sets those after its imports.
      const { closeContext } = await import('../context.ts');
      await closeContext();
      await stack.close();
    },
  };
}

/**
 * A JSON request as the console's own pages send it, addressed to the loopback console the handlers expect;
 * `headers` adds to it (a session cookie, for a test with sign-in on).
 */
export function routeRequest(method: string, path: string, body?: unknown, headers?: Record<string, string>): Request {
  return new Request(`http://127.0.0.1:3000${path}`, {
    method,
    headers: { 'content-type': 'application/json', host: '127.0.0.1:3000', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}
