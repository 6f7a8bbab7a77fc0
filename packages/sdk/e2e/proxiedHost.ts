// A subscriber host of the 'crm' endpoint whose broker connection runs through a TCP fault proxy the test can cut,
// restore or silence, with the shop's publisher connecting directly: the set-up of the tests that break the host's
// connection under it (sessionLockRenewal, silentStop).
import { HandlerRegistry, SubscriberHost, type Publisher, type SubscriberHostOptions } from '@nimbus/sdk';
import type { TcpFaultProxy } from '../../../server/testing/tcpFaultProxy.ts';
import type { Harness } from './harness.ts';
import { proxiedClients } from './replayHarness.ts';

export interface ProxiedHost {
  proxy: TcpFaultProxy;
  host: SubscriberHost;
  /** The customerIds of the CustomerUpdated events the host handled, in order. */
  handled: string[];
  /** The shop's publisher, on the harness's own (direct) connection. */
  publisher: Publisher;
  /**
   * Closes the publisher and the proxy. The host is the test's to stop (stopping it may be what the test measures).
   * The proxied client's close is not awaited: on a silenced or reset connection it can wait for what stop() gave
   * up on (such files end their process after their results, harness.ts endProcessAfterResults).
   */
  close(): Promise<void>;
}

export async function startProxiedHost(
  h: Harness,
  options: Pick<SubscriberHostOptions, 'sessionConnection' | 'maxConcurrentSessions' | 'sessionIdleTimeoutMs' | 'operationTimeoutMs'>,
): Promise<ProxiedHost> {
  const { proxy, clients } = await proxiedClients(h);
  const handled: string[] = [];
  const host = new SubscriberHost({
    client: clients.client,
    endpointId: 'crm',
    backoff: { initialMs: 50, maxMs: 500 },
    deferredProcessor: false,
    handlers: new HandlerRegistry().on<{ customerId: string }>('CustomerUpdated', async (e) => {
      handled.push(e.customerId);
    }),
    ...options,
  });
  const publisher = h.publisher('shop');
  return {
    proxy,
    host,
    handled,
    publisher,
    close: async () => {
      await publisher.close().catch(() => undefined);
      await proxy.close();
      void clients.close().catch(() => undefined);
    },
  };
}
