// Parsing and validating Service Bus connection strings. The key never appears in an error message, a log
// line or JSON.stringify of the result: the canonical string (which contains it) is a non-enumerable property.

import { z } from 'zod';

export class ConnectionStringError extends Error {
  constructor(message: string) {
    super(`Invalid Service Bus connection string: ${message}`);
    this.name = 'ConnectionStringError';
  }
}

export interface ServiceBusConnectionInfo {
  /** sb://host[:port]/ */
  readonly endpoint: string;
  readonly hostname: string;
  /** Only when the Endpoint names one. */
  readonly port?: number;
  /** host[:port], as the SDK uses it. */
  readonly fullyQualifiedNamespace: string;
  /** tokenCredential: a namespace with Microsoft Entra identity (no connection string; see namespace.ts). */
  readonly authentication: 'sharedAccessKey' | 'sharedAccessSignature' | 'tokenCredential';
  readonly sharedAccessKeyName?: string;
  readonly entityPath?: string;
  readonly useDevelopmentEmulator: boolean;
  /** The connection string in the form the SDK expects (contains the secret; not enumerable). */
  readonly connectionString: string;
  /** The connection string with secrets replaced, safe for logs. */
  readonly redacted: string;
}

const KNOWN_KEYS = [
  'Endpoint',
  'SharedAccessKeyName',
  'SharedAccessKey',
  'SharedAccessSignature',
  'EntityPath',
  'UseDevelopmentEmulator',
] as const;
type KnownKey = (typeof KNOWN_KEYS)[number];

const nonEmpty = (name: string) =>
  z
    .string({ error: `${name} is missing` })
    .trim()
    .min(1, { error: `${name} is empty` });

const fieldsSchema = z
  .object({
    Endpoint: nonEmpty('Endpoint'),
    SharedAccessKeyName: nonEmpty('SharedAccessKeyName').optional(),
    SharedAccessKey: nonEmpty('SharedAccessKey').optional(),
    SharedAccessSignature: nonEmpty('SharedAccessSignature').optional(),
    EntityPath: nonEmpty('EntityPath').optional(),
    UseDevelopmentEmulator: z
      .string()
      .trim()
      .toLowerCase()
      .pipe(z.enum(['true', 'false'], { error: 'UseDevelopmentEmulator must be true or false' }))
      .optional(),
  })
  .refine(
    (f) =>
      f.SharedAccessSignature !== undefined ||
      (f.SharedAccessKeyName !== undefined && f.SharedAccessKey !== undefined),
    {
      error: 'it needs SharedAccessKeyName and SharedAccessKey, or SharedAccessSignature',
    },
  )
  .refine((f) => !(f.SharedAccessSignature !== undefined && f.SharedAccessKey !== undefined), {
    error: 'give either SharedAccessKey or SharedAccessSignature, not both',
  });

function splitPairs(connectionString: string): Partial<Record<KnownKey, string>> {
  const out: Partial<Record<KnownKey, string>> = {};
  for (const part of connectionString.split(';')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    if (eq <= 0)
      throw new ConnectionStringError(`expected key=value pairs separated by ';' (a part has no key or '=')`);
    const rawKey = part.slice(0, eq).trim();
    // Base64 keys end in '=', so only the first '=' separates key from value.
    const value = part.slice(eq + 1);
    const key = KNOWN_KEYS.find((k) => k.toLowerCase() === rawKey.toLowerCase());
    if (!key) {
      // A pasted secret can end up where a key name belongs; only short plain words are echoed.
      const shown = /^[A-Za-z]{1,30}$/.test(rawKey) ? ` '${rawKey}'` : '';
      throw new ConnectionStringError(`unknown key${shown} (expected ${KNOWN_KEYS.join(', ')})`);
    }
    if (out[key] !== undefined) throw new ConnectionStringError(`${key} appears more than once`);
    out[key] = value;
  }
  return out;
}

function parseEndpoint(endpoint: string): { hostname: string; port?: number } {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new ConnectionStringError(
      'Endpoint must look like sb://<namespace>.servicebus.windows.net/ or sb://127.0.0.1:5672',
    );
  }
  if (url.protocol !== 'sb:')
    throw new ConnectionStringError(
      `Endpoint must use the sb:// scheme (got ${url.protocol.slice(0, 20)}//)`,
    );
  if (url.hostname === '') throw new ConnectionStringError('Endpoint has no host name');
  if (url.username !== '' || url.password !== '')
    throw new ConnectionStringError('Endpoint must not contain credentials');
  if (url.pathname !== '' && url.pathname !== '/')
    throw new ConnectionStringError('Endpoint must not contain a path (use EntityPath)');
  if (url.port === '') return { hostname: url.hostname };
  return { hostname: url.hostname, port: Number(url.port) };
}

export function parseConnectionString(connectionString: string): ServiceBusConnectionInfo {
  if (typeof connectionString !== 'string' || connectionString.trim() === '') {
    throw new ConnectionStringError('it is empty');
  }
  const parsed = fieldsSchema.safeParse(splitPairs(connectionString));
  if (!parsed.success) {
    // Messages are our own and name keys only; zod never sees them echo a value.
    throw new ConnectionStringError(parsed.error.issues.map((i) => i.message).join('; '));
  }
  const f = parsed.data;
  const { hostname, port } = parseEndpoint(f.Endpoint);
  const fullyQualifiedNamespace = port === undefined ? hostname : `${hostname}:${port}`;
  const endpoint = `sb://${fullyQualifiedNamespace}/`;
  const useDevelopmentEmulator = f.UseDevelopmentEmulator === 'true';

  const build = (secret: (value: string) => string): string =>
    [
      `Endpoint=${endpoint}`,
      f.SharedAccessKeyName !== undefined ? `SharedAccessKeyName=${f.SharedAccessKeyName}` : undefined,
      f.SharedAccessKey !== undefined ? `SharedAccessKey=${secret(f.SharedAccessKey)}` : undefined,
      f.SharedAccessSignature !== undefined
        ? `SharedAccessSignature=${secret(f.SharedAccessSignature)}`
        : undefined,
      f.EntityPath !== undefined ? `EntityPath=${f.EntityPath}` : undefined,
      // core-amqp compares this value with exactly "true".
      useDevelopmentEmulator ? 'UseDevelopmentEmulator=true' : undefined,
    ]
      .filter((p): p is string => p !== undefined)
      .join(';');

  const info = {
    endpoint,
    hostname,
    ...(port === undefined ? {} : { port }),
    fullyQualifiedNamespace,
    authentication: f.SharedAccessSignature !== undefined ? 'sharedAccessSignature' : 'sharedAccessKey',
    ...(f.SharedAccessKeyName !== undefined ? { sharedAccessKeyName: f.SharedAccessKeyName } : {}),
    ...(f.EntityPath !== undefined ? { entityPath: f.EntityPath } : {}),
    useDevelopmentEmulator,
    redacted: build(() => '***'),
  } as const;
  Object.defineProperty(info, 'connectionString', { value: build((v) => v), enumerable: false });
  return info as typeof info & { readonly connectionString: string };
}
