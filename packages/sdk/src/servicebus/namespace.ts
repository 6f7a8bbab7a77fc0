// Connecting to Service Bus by namespace and Microsoft Entra identity instead of a connection string:
// NIMBUS_SERVICEBUS_NAMESPACE names the fully qualified namespace (mybus.servicebus.windows.net) and the
// credential (DefaultAzureCredential unless a caller passes its own) proves who we are. The choice between the two
// settings is made here, once, for every part that reads the environment.
import type { TokenCredential } from '../identity/credential.ts';

/** How a part connects: a connection string (SAS key), or a namespace with a token credential. */
export type ServiceBusConnection =
  | string
  | {
      /** host[:port], e.g. mybus.servicebus.windows.net */
      fullyQualifiedNamespace: string;
      /** Default: DefaultAzureCredential, loaded on first use (packages/sdk/src/identity/credential.ts). */
      credential?: TokenCredential;
    };

export const CONNECTION_STRING_VARIABLE = 'NIMBUS_SERVICEBUS_CONNECTION_STRING';
export const NAMESPACE_VARIABLE = 'NIMBUS_SERVICEBUS_NAMESPACE';

export class NamespaceError extends Error {
  override readonly name = 'NamespaceError';
}

/**
 * The fully qualified namespace, normalized (lower case, no scheme or trailing slash). Accepts `sb://host/` and
 * `https://host/` forms as the portal shows them; refuses what is not a host name, naming the variable only.
 */
export function parseNamespace(value: string): string {
  const text = value.trim();
  if (text === '') throw new NamespaceError(`${NAMESPACE_VARIABLE} is empty`);
  if (/[;=]/.test(text))
    throw new NamespaceError(
      `${NAMESPACE_VARIABLE} looks like a connection string; put a connection string in ${CONNECTION_STRING_VARIABLE}, or set ${NAMESPACE_VARIABLE} to the namespace's host name (e.g. mybus.servicebus.windows.net)`,
    );
  const bare = text.replace(/^(sb|amqps|https):\/\//i, '').replace(/\/+$/, '');
  const m = /^([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+)(?::(\d{1,5}))?$/i.exec(bare);
  if (!m || (m[2] !== undefined && (Number(m[2]) < 1 || Number(m[2]) > 65535)))
    throw new NamespaceError(
      `${NAMESPACE_VARIABLE} must be the fully qualified namespace, a host name such as mybus.servicebus.windows.net`,
    );
  return bare.toLowerCase();
}

/**
 * The Service Bus setting the environment names, or the problems with it (variable names, never values).
 * Exactly one of the connection string and the namespace must be set.
 */
export function serviceBusConnectionFromEnv(
  env: Record<string, string | undefined>,
): { ok: true; connection: ServiceBusConnection; kind: 'connectionString' | 'namespace' } | { ok: false; problems: string[] } {
  const cs = (env[CONNECTION_STRING_VARIABLE] ?? '').trim();
  const ns = (env[NAMESPACE_VARIABLE] ?? '').trim();
  if (cs !== '' && ns !== '')
    return {
      ok: false,
      problems: [
        `${CONNECTION_STRING_VARIABLE} and ${NAMESPACE_VARIABLE} are both set: set one (the connection string for a SAS key, the namespace for Microsoft Entra identity)`,
      ],
    };
  if (cs === '' && ns === '')
    return {
      ok: false,
      problems: [
        `${CONNECTION_STRING_VARIABLE} or ${NAMESPACE_VARIABLE} is not set: set the connection string, or the namespace (e.g. mybus.servicebus.windows.net) to sign in with DefaultAzureCredential`,
      ],
    };
  if (cs !== '') return { ok: true, connection: cs, kind: 'connectionString' };
  try {
    return { ok: true, connection: { fullyQualifiedNamespace: parseNamespace(ns) }, kind: 'namespace' };
  } catch (err) {
    return { ok: false, problems: [(err as Error).message] };
  }
}
