// The start-up check of a host: do the subscriptions it will receive from exist? Without it a host on a namespace
// that was never provisioned starts "fine" and then logs accept failures forever.
//
// The check peeks one message on each subscription. A peek needs only Listen, the right the host needs anyway to
// receive, so it works for a least-privilege endpoint identity (a Listen-only SAS or an RBAC Data Receiver), which
// cannot call the admin plane (`subscriptionExists` needs Manage). It takes no lock, moves nothing and works on
// session-enabled subscriptions without accepting a session (a peek is a management call on the entity, not a
// receive link), so a running instance of the same endpoint is not disturbed.
import type { ServiceBusClient } from '@azure/service-bus';
import { errorSummary } from './dispatcher.ts';

export class MissingEntityError extends Error {
  override readonly name = 'MissingEntityError';
  /** `topic/subscription` of every entity that is missing. */
  readonly entities: readonly string[];
  constructor(message: string, entities: readonly string[]) {
    super(message);
    this.entities = entities;
  }
}

export class EntityCheckError extends Error {
  override readonly name = 'EntityCheckError';
}

/**
 * Throws one MissingEntityError naming every missing subscription (and what to run), or one EntityCheckError when
 * the broker could not be asked (no Listen right, unreachable).
 */
export async function assertSubscriptionsExist(
  client: ServiceBusClient,
  subscriptions: ReadonlyArray<readonly [topic: string, subscription: string]>,
  options: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<void> {
  const missing: string[] = [];
  for (const [topic, subscription] of subscriptions) {
    const receiver = client.createReceiver(topic, subscription);
    const signal = AbortSignal.any([
      AbortSignal.timeout(options.timeoutMs ?? 30_000),
      ...(options.signal ? [options.signal] : []),
    ]);
    try {
      await receiver.peekMessages(1, { abortSignal: signal });
    } catch (error) {
      const err = errorSummary(error);
      if (err.code === 'MessagingEntityNotFound') {
        missing.push(`${topic}/${subscription}`);
        continue;
      }
      throw new EntityCheckError(
        `cannot check subscription '${topic}/${subscription}' on ${client.fullyQualifiedNamespace}: ${err.message}` +
          (err.code === 'UnauthorizedAccess' ? ' (the host needs Listen on its endpoint topic)' : ''),
        { cause: error },
      );
    } finally {
      await receiver.close().catch(() => undefined);
    }
  }
  if (missing.length === 0) return;
  const list = missing.map((m) => `'${m}'`).join(', ');
  throw new MissingEntityError(
    `${missing.length === 1 ? 'subscription' : 'subscriptions'} ${list} ${missing.length === 1 ? 'does' : 'do'} not exist on ` +
      `${client.fullyQualifiedNamespace}: provision the topology from the catalog first (\`npm run provision\`), ` +
      `or check the endpoint id and connection string`,
    missing,
  );
}
