// Closing a Service Bus client so that nothing of its connection keeps Node alive afterwards. Why: rhea 3 (under
// @azure/service-bus 7.9) arms a 120 s idle timer (twice the 60 s idle timeout it announces) whenever it writes to
// a connection that has none armed, and a connection closed while its handshake was still running (a host stopped
// right after start(), a SIGTERM during a rolling deploy) writes its close frame once more after the socket is gone:
// the 'write after end' error clears the timer, then the second close frame arms a new one, on a dead socket, that
// nothing clears. The client's close() had resolved long before; the process stayed up 120 s after the adapter had
// closed everything (measured in packages/sdk/e2e/processExit.test.ts). Such a timer has no work left to do once
// the connection is closing (its idle() does nothing on a closed connection), so from the close on, every timer the
// connection arms is unref'd: it still runs if the process lives on, it no longer keeps the process alive.
//
// The connection is an internal of @azure/service-bus and rhea-promise, checked here: when it is not there (another
// version, a mock), the client is closed as it is.
import type { ServiceBusClient } from '@azure/service-bus';

/** The timers rhea's Connection arms: heartbeats in and out, and the socket abort after an idle close. */
const CONNECTION_TIMERS = ['heartbeat_in', 'heartbeat_out', 'abort_idle'] as const;
const unrefMarked = Symbol('nimbus.connectionTimersUnrefd');

type RheaConnectionLike = Record<string, unknown> & { [unrefMarked]?: true };

const unref = (timer: unknown): void => {
  if (typeof timer === 'object' && timer !== null && typeof (timer as NodeJS.Timeout).unref === 'function')
    (timer as NodeJS.Timeout).unref();
};

/** The rhea connection under a client's current connection, or undefined when the client is not shaped so. */
function rheaConnectionOf(client: ServiceBusClient): RheaConnectionLike | undefined {
  const context = (client as unknown as { _connectionContext?: { connection?: { _connection?: unknown } } })
    ._connectionContext;
  const connection = context?.connection?._connection;
  if (typeof connection !== 'object' || connection === null) return undefined;
  // rhea's Connection keeps these fields from construction on (undefined until armed); anything else is not rhea's.
  if (!CONNECTION_TIMERS.every((name) => name in connection)) return undefined;
  return connection as RheaConnectionLike;
}

/**
 * From now on, every timer `connection` holds or arms is unref'd. The fields become accessors on the instance, so
 * rhea's own reads, clears and re-arms work as before.
 */
function unrefConnectionTimers(connection: RheaConnectionLike): void {
  if (connection[unrefMarked]) return;
  connection[unrefMarked] = true;
  for (const name of CONNECTION_TIMERS) {
    let value = connection[name];
    unref(value);
    Object.defineProperty(connection, name, {
      configurable: true,
      enumerable: true,
      get: () => value,
      set: (next: unknown) => {
        unref(next);
        value = next;
      },
    });
  }
}

/** Runs `close`, the close of `client`'s connection, with every timer that connection arms from now on unref'd. */
async function closeUnrefingTimers(client: ServiceBusClient, close: () => Promise<void>): Promise<void> {
  const before = rheaConnectionOf(client);
  if (before) unrefConnectionTimers(before);
  try {
    await close();
  } finally {
    // A connection replaced during the close (a reconnect while the links were closing) is closed by it too.
    const after = rheaConnectionOf(client);
    if (after) unrefConnectionTimers(after);
  }
}

const closeWrapped = Symbol('nimbus.closeUnrefsTimers');

/**
 * Makes `client.close()` itself leave nothing that keeps the process alive, so code that closes the client it was
 * handed (`await client.close()` in a SIGTERM handler) gets it too. createServiceBusClients() and the host's own
 * connections do this to every client they build. Returns the client.
 */
export function unrefTimersOnClose<C extends ServiceBusClient>(client: C): C {
  const marked = client as C & { [closeWrapped]?: true };
  if (marked[closeWrapped]) return client;
  const close = client.close.bind(client);
  Object.defineProperty(client, 'close', {
    configurable: true,
    writable: true,
    value: () => closeUnrefingTimers(client, close),
  });
  marked[closeWrapped] = true;
  return client;
}

/**
 * Closes `client` (its links, then its connection) so that no timer its connection arms during or after the close
 * keeps the process alive. For a ServiceBusClient you built yourself; one from createServiceBusClients() does the
 * same on its own `close()`.
 */
export function closeServiceBusClient(client: ServiceBusClient): Promise<void> {
  return closeUnrefingTimers(client, () => client.close());
}
