// Test support: a real broker behind the admin handler on an ephemeral loopback port, and the real
// ServiceBusAdministrationClient built by packages/sdk/src/servicebus (as all our code builds it).

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServiceBusAdministrationClient } from '@azure/service-bus';
import { createBroker, type Broker } from '../broker/index.ts';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { createAdminHandler, type AdminHandlerOptions } from './http.ts';
import { createAccessControl } from '../auth/access.ts';
import { PolicyStore, ROOT_KEY_NAME } from '../auth/policies.ts';
import { createSasToken } from '../auth/sas-token.ts';

/** The namespace key the harness's admin client signs with; every request is verified against it. */
export const HARNESS_KEY = 'harness-namespace-key-0123456789';

export interface AdminHarness {
  broker: Broker;
  admin: ServiceBusAdministrationClient;
  /** http://127.0.0.1:port, for raw requests. */
  baseUrl: string;
  port: number;
  close(): Promise<void>;
}

export async function startAdminHarness(options: AdminHandlerOptions = {}): Promise<AdminHarness> {
  const broker = await createBroker();
  const access = createAccessControl({ policies: new PolicyStore(HARNESS_KEY) });
  const server = http.createServer(createAdminHandler(broker, { access, ...options }));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  const clients = createServiceBusClients(
    `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${HARNESS_KEY};UseDevelopmentEmulator=true`,
    // A failing call should fail the test at once, not after the SDK's back-off.
    { admin: { retryOptions: { maxRetries: 0 } } },
  );
  return {
    broker,
    admin: clients.admin,
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    async close() {
      await clients.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await broker.close();
    },
  };
}

/** An Authorization header for a raw request to `url`, signed with the harness's namespace key. */
export function authorization(url: string, key = HARNESS_KEY, keyName = ROOT_KEY_NAME): string {
  return createSasToken(url.toLowerCase(), keyName, key, Math.floor(Date.now() / 1000) + 300);
}

/** The RestError fields a test asserts on. */
export function restError(err: unknown): { code?: string; statusCode?: number; message: string } {
  const e = err as { code?: string; statusCode?: number; message?: string };
  return { code: e.code, statusCode: e.statusCode, message: e.message ?? String(err) };
}

/** Asserts that `promise` rejects with a RestError of this code and status; returns the error's message. */
export async function rejectsWith(
  promise: Promise<unknown>,
  code: string,
  statusCode: number,
): Promise<string> {
  try {
    await promise;
  } catch (err) {
    const e = restError(err);
    if (e.code !== code || e.statusCode !== statusCode) {
      throw new Error(`expected ${code}/${statusCode}, got ${e.code}/${e.statusCode}: ${e.message}`);
    }
    return e.message;
  }
  throw new Error(`expected ${code}/${statusCode}, but the call succeeded`);
}

/** Everything an async iterator yields (listRules() and friends). */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
