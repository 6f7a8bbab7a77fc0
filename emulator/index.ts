// startEmulator(): the embedded Azure Service Bus emulator as one call. It creates the broker, the AMQP data
// plane and the admin plane, serves both on one loopback port, and returns the connection string the
// unmodified @azure/service-bus client uses (UseDevelopmentEmulator=true selects plain TCP). That connection
// string carries the namespace key (RootManageSharedAccessKey): every AMQP link and admin request is checked
// against it and the policies created through the admin plane, as Azure checks SAS (see docs/emulator.md).

import { pino, type Logger } from 'pino';
import { z } from 'zod';
import type { Broker } from './broker/api.ts';
import { createServiceBusBroker } from './broker/index.ts';
import type { JournalIo } from './broker/journal.ts';
import { createAdminHandler } from './admin/http.ts';
import { AMQP_LIMIT_DEFAULTS, createAmqpPlane, type AmqpLimits } from './amqp/plane.ts';
import { assertLoopback, startEmulatorServer } from './server.ts';
import { createAccessControl } from './auth/access.ts';
import { generateKey, PolicyStore, ROOT_KEY_NAME } from './auth/policies.ts';
import { loadOrCreateCertificate, type TlsMaterial } from './tls-certificate.ts';
import { DispositionHold } from './amqp/disposition-hold.ts';

export type { DispositionHold } from './amqp/disposition-hold.ts';

export interface StartEmulatorOptions {
  /** TCP port; 0 picks a free one. Default 5672. */
  port?: number;
  /** Loopback address only. Default 127.0.0.1. */
  host?: string;
  /** Directory for durable state; absent = memory only. */
  dataDir?: string;
  maxMessageSizeBytes?: number;
  memoryBudgetBytes?: number;
  /** pino level; default 'silent'. Ignored when `logger` is given (its own level applies). */
  logLevel?: 'silent' | 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
  /**
   * Log through this pino logger instead of one of the emulator's own, so that a host (`npm start`) shows the
   * emulator's records among its own, e.g. a journal found damaged at start-up. Absent = the emulator's own pino
   * at `logLevel`, as before.
   */
  logger?: Logger;
  /** A connection that has not finished the AMQP open (or sent its first bytes) within this time is dropped. */
  handshakeTimeoutMs?: number;
  /** Caps per client: connections, sessions per connection, links per session, bytes per connection. */
  limits?: Partial<AmqpLimits>;
  /** The namespace key (RootManageSharedAccessKey). Absent = a new random key each start. */
  key?: string;
  /**
   * Skip every SAS check (put-token, link rights, the admin plane's Authorization header), as the emulator
   * behaved before it verified credentials. For old tests only.
   */
  allowAnonymous?: boolean;
  /**
   * Also listen for AMQPS (TLS) on this port (Azure's is 5671; 0 = any free port), for clients that always
   * use TLS. The certificate is `tlsCert`/`tlsKey` (PEM file paths), or one generated into `dataDir` (or a
   * temporary directory) on first start.
   */
  tlsPort?: number;
  tlsCert?: string;
  tlsKey?: string;
  /**
   * Tests only: gives the running emulator a `dispositionHold` with which a test makes it leave the client's
   * settlements unanswered (a broker that stops answering). Off by default; never set by the CLI or the stack.
   */
  testDispositionHold?: boolean;
  /**
   * Tests only: the file system calls of the broker's journal, so that a test can make the disk fail (full,
   * failing) under a real client. Never set by the CLI or the stack.
   */
  testJournalIo?: Partial<JournalIo>;
}

export interface RunningEmulator {
  /** Endpoint, RootManageSharedAccessKey and its key: what a client needs. Secret: never log it. */
  connectionString: string;
  /** The namespace key inside connectionString. */
  key: string;
  port: number;
  host: string;
  /** The AMQPS listener, when tlsPort was given: its port, certificate file and SHA-256 fingerprint. */
  tls?: { port: number; certPath: string; fingerprint: string };
  broker: Broker;
  /** Present only with `testDispositionHold`: holds the answers to settlements while the test says so. */
  dispositionHold?: DispositionHold;
  /** Bytes each AMQP connection holds now (deliveries being assembled + output not yet read). */
  connectionBytes(): number[];
  close(): Promise<void>;
}

const optionsSchema = z.object({
  port: z.number().int().min(0).max(65535).default(5672),
  host: z.string().default('127.0.0.1'),
  dataDir: z.string().min(1).optional(),
  maxMessageSizeBytes: z.number().int().positive().optional(),
  memoryBudgetBytes: z.number().int().positive().optional(),
  logLevel: z.enum(['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('silent'),
  handshakeTimeoutMs: z.number().int().positive().optional(),
  key: z
    .string()
    .min(16, { error: 'the key needs at least 16 characters' })
    .max(256)
    .regex(/^[A-Za-z0-9+/_-]+=*$/, { error: 'the key may use base64 characters only' })
    .optional(),
  allowAnonymous: z.boolean().default(false),
  tlsPort: z.number().int().min(0).max(65535).optional(),
  tlsCert: z.string().min(1).optional(),
  tlsKey: z.string().min(1).optional(),
  testDispositionHold: z.boolean().default(false),
  limits: z
    .object({
      maxConnections: z.number().int().positive(),
      maxSessionsPerConnection: z.number().int().positive(),
      maxLinksPerSession: z.number().int().positive(),
      // At least one frame; below a delivery's size a large message closes its connection instead of failing cleanly.
      connectionBudgetBytes: z
        .number()
        .int()
        .min(256 * 1024),
    })
    .partial()
    .strict()
    .default({}),
});

export function emulatorConnectionString(host: string, port: number, key: string): string {
  const h = host === '::1' ? '[::1]' : host;
  return `Endpoint=sb://${h}:${port};SharedAccessKeyName=${ROOT_KEY_NAME};SharedAccessKey=${key};UseDevelopmentEmulator=true`;
}

export async function startEmulator(input: StartEmulatorOptions = {}): Promise<RunningEmulator> {
  const parsed = optionsSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `Invalid emulator options: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'malformed'}`,
    );
  }
  const opts = parsed.data;
  assertLoopback(opts.host);
  // Not in the schema: the host's logger is an object to use as given, not a setting to check.
  const log = input.logger ?? pino({ name: 'servicebus-emulator', level: opts.logLevel });
  const key = opts.key ?? generateKey();
  const policies = new PolicyStore(key, {
    dataDir: opts.dataDir,
    onLoadError: (message) => log.warn({}, message),
  });
  const access = createAccessControl({ policies, anonymous: opts.allowAnonymous });
  if (opts.allowAnonymous) log.warn({}, 'SAS checks are off (allowAnonymous): any client may do anything');

  // The broker locks the data directory before it reads anything in it (data-dir-lock.ts), so a second start
  // on a directory in use fails here, before it has compacted or deleted anything.
  const broker = await createServiceBusBroker(
    {
      dataDir: opts.dataDir,
      maxMessageSizeBytes: opts.maxMessageSizeBytes,
      memoryBudgetBytes: opts.memoryBudgetBytes,
      log: log.child({ component: 'broker' }),
    },
    input.testJournalIo ? { io: input.testJournalIo } : {},
  );
  const dispositionHold = opts.testDispositionHold ? new DispositionHold() : undefined;
  if (dispositionHold) log.warn({}, 'test option: settlements can be held unanswered (testDispositionHold)');
  const amqp = createAmqpPlane({
    broker,
    ...(dispositionHold ? { dispositionHold } : {}),
    log: log.child({ component: 'amqp' }),
    access,
    limits: opts.limits,
    handshakeTimeoutMs: opts.handshakeTimeoutMs,
  });
  let server;
  let tlsMaterial: TlsMaterial | undefined;
  try {
    if (opts.tlsPort !== undefined) {
      tlsMaterial = loadOrCreateCertificate({
        certPath: opts.tlsCert,
        keyPath: opts.tlsKey,
        dir: opts.dataDir,
      });
    }
    server = await startEmulatorServer({
      host: opts.host,
      port: opts.port,
      amqp,
      admin: createAdminHandler(broker, { log: log.child({ component: 'admin' }), access }),
      log: log.child({ component: 'server' }),
      firstBytesTimeoutMs: opts.handshakeTimeoutMs,
      // Sockets that have not said what they are yet count too; well above the AMQP cap, so that the AMQP
      // plane can answer the first refused connections with resource-limit-exceeded.
      maxSockets: (opts.limits.maxConnections ?? AMQP_LIMIT_DEFAULTS.maxConnections) + 100,
      ...(tlsMaterial && opts.tlsPort !== undefined
        ? { tls: { port: opts.tlsPort, cert: tlsMaterial.cert, key: tlsMaterial.key } }
        : {}),
    });
  } catch (err) {
    await broker.close();
    throw err;
  }
  const running = server;
  log.info({ host: running.host, port: running.port, tlsPort: running.tlsPort }, 'emulator ready');

  let closing: Promise<void> | undefined;
  return {
    connectionString: emulatorConnectionString(running.host, running.port, key),
    key,
    port: running.port,
    host: running.host,
    ...(tlsMaterial && running.tlsPort !== undefined
      ? {
          tls: {
            port: running.tlsPort,
            certPath: tlsMaterial.certPath,
            fingerprint: tlsMaterial.fingerprint,
          },
        }
      : {}),
    broker,
    ...(dispositionHold ? { dispositionHold } : {}),
    connectionBytes: () => amqp.connectionBytes(),
    close(): Promise<void> {
      closing ??= (async () => {
        await running.close();
        await broker.close();
        log.info({}, 'emulator stopped');
      })();
      return closing;
    },
  };
}
