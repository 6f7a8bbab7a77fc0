// Shared helpers for the emulator conformance suite. The suite talks to the emulator only through the
// unmodified @azure/service-bus clients (built by packages/sdk/src/servicebus, as all our code builds them); the emulator
// itself is touched only to start and stop it. Every wait here is bounded so a broken emulator fails a test
// instead of hanging the run.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isServiceBusError } from '@azure/service-bus';
import type {
  ServiceBusClient,
  CreateSubscriptionOptions,
  ServiceBusAdministrationClient,
  ServiceBusReceivedMessage,
  ServiceBusReceiver,
  ServiceBusSessionReceiver,
  SqlRuleAction,
  SqlRuleFilter,
  CorrelationRuleFilter,
} from '@azure/service-bus';
import { startEmulator, type StartEmulatorOptions } from '../index.ts';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';

type StartedEmulator = Awaited<ReturnType<typeof startEmulator>>;

/** Client options that keep failures fast: one retry, short operation timeout. */
export const FAST_RETRY = { maxRetries: 1, retryDelayInMs: 100, maxRetryDelayInMs: 500, timeoutInMs: 10_000 };

export interface Harness {
  emulator: StartedEmulator;
  connectionString: string;
  port: number;
  /** The data-plane client from packages/sdk/src/servicebus (default options). */
  client: ServiceBusClient;
  admin: ServiceBusAdministrationClient;
  /** A data-plane client with short timeouts and few retries (for error and timeout tests). */
  fastClient: ServiceBusClient;
  /** An extra client for this harness; closed with it. */
  newClient(options?: { timeoutInMs?: number; maxRetries?: number }): ServiceBusClient;
  close(): Promise<void>;
}

/** Starts an emulator on an ephemeral loopback port and builds the clients. */
export async function startHarness(
  options: Omit<StartEmulatorOptions, 'port' | 'host'> = {},
): Promise<Harness> {
  const emulator = await startEmulator({ ...options, port: 0 });
  const clients = createServiceBusClients(emulator.connectionString, {
    admin: { retryOptions: { maxRetries: 1 } },
  });
  const extra: Array<{ close(): Promise<void> }> = [];
  const newClient = (o: { timeoutInMs?: number; maxRetries?: number } = {}): ServiceBusClient => {
    const c = createServiceBusClients(emulator.connectionString, {
      client: { retryOptions: { ...FAST_RETRY, ...o } },
    });
    extra.push(c);
    return c.client;
  };
  const fastClient = newClient();
  let closed = false;
  return {
    emulator,
    connectionString: emulator.connectionString,
    port: emulator.port,
    client: clients.client,
    admin: clients.admin,
    fastClient,
    newClient,
    async close() {
      if (closed) return;
      closed = true;
      // Clients first (they may hold links the emulator would otherwise wait for), then the emulator.
      await Promise.allSettled(extra.map((c) => c.close()));
      await Promise.allSettled([clients.close()]);
      await emulator.close();
    },
  };
}

/**
 * One emulator and its clients for a whole test file: started before the file's first test, closed after its
 * last. Call at the top level of the file; the returned harness is filled in once the `before` hook ran.
 */
export function useHarness(options: Omit<StartEmulatorOptions, 'port' | 'host'> = {}): Harness {
  const harness = {} as Harness;
  before(async () => {
    Object.assign(harness, await startHarness(options));
  });
  after(async () => {
    // Absent when startHarness itself failed: that failure is the one to report.
    await harness.close?.();
  });
  return harness;
}

/** A temporary directory for --data-dir tests, removed by the returned cleanup. */
export async function tempDir(prefix: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `nimbus-${prefix}-`));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Entity names unique per call, so tests sharing one emulator never see each other's messages. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export interface RuleSpec {
  name: string;
  filter: SqlRuleFilter | CorrelationRuleFilter | boolean;
  action?: SqlRuleAction;
}

export interface SubscriptionSpec {
  name: string;
  options?: Omit<CreateSubscriptionOptions, 'defaultRuleOptions'>;
  /** Rules replacing $Default. Absent: the subscription keeps its $Default (true) rule. */
  rules?: RuleSpec[];
}

function toFilter(f: RuleSpec['filter']): SqlRuleFilter | CorrelationRuleFilter {
  if (f === true) return { sqlExpression: '1=1' };
  if (f === false) return { sqlExpression: '1=0' };
  return f;
}

/** Creates a topic and its subscriptions (with their rules) through the admin client. */
export async function createTopicWithSubscriptions(
  admin: ServiceBusAdministrationClient,
  topic: string,
  subscriptions: SubscriptionSpec[],
): Promise<void> {
  await admin.createTopic(topic);
  for (const s of subscriptions) {
    await createSubscriptionWithRules(admin, topic, s);
  }
}

export async function createSubscriptionWithRules(
  admin: ServiceBusAdministrationClient,
  topic: string,
  s: SubscriptionSpec,
): Promise<void> {
  const [first, ...rest] = s.rules ?? [];
  await admin.createSubscription(topic, s.name, {
    ...(s.options ?? {}),
    ...(first
      ? {
          defaultRuleOptions: {
            name: first.name,
            filter: toFilter(first.filter),
            ...(first.action ? { action: first.action } : {}),
          },
        }
      : {}),
  });
  for (const r of rest) {
    if (r.action) await admin.createRule(topic, s.name, r.name, toFilter(r.filter), r.action);
    else await admin.createRule(topic, s.name, r.name, toFilter(r.filter));
  }
}

/**
 * Receives until `count` messages arrived or `timeoutMs` passed; returns what arrived (the caller asserts).
 * `settle`: 'complete' completes each peek-locked message; 'none' leaves them locked.
 */
export async function receiveUntil(
  receiver: ServiceBusReceiver | ServiceBusSessionReceiver,
  count: number,
  options: { timeoutMs?: number; settle?: 'complete' | 'none' } = {},
): Promise<ServiceBusReceivedMessage[]> {
  const deadline = Date.now() + (options.timeoutMs ?? 8_000);
  const out: ServiceBusReceivedMessage[] = [];
  while (out.length < count) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const batch = await receiver.receiveMessages(count - out.length, {
      maxWaitTimeInMs: Math.min(left, 2_000),
    });
    for (const m of batch) {
      if (options.settle === 'complete' && receiver.receiveMode === 'peekLock')
        await receiver.completeMessage(m);
      out.push(m);
    }
  }
  return out;
}

/** Receives everything that arrives within `idleMs` of quiet (receive-and-delete or complete). */
export async function receiveAll(
  receiver: ServiceBusReceiver,
  options: { expected?: number; timeoutMs?: number; idleMs?: number } = {},
): Promise<ServiceBusReceivedMessage[]> {
  const out = await receiveUntil(receiver, options.expected ?? 1_000, {
    timeoutMs: options.expected === undefined ? (options.idleMs ?? 500) : (options.timeoutMs ?? 8_000),
    settle: 'complete',
  });
  // One more short look for anything beyond what was expected (a filter matching too much).
  const extra = await receiver.receiveMessages(50, { maxWaitTimeInMs: options.idleMs ?? 400 });
  for (const m of extra) {
    if (receiver.receiveMode === 'peekLock') await receiver.completeMessage(m);
    out.push(m);
  }
  return out;
}

/** Asserts that nothing arrives within `waitMs`. */
export async function expectNoMessage(receiver: ServiceBusReceiver, waitMs = 500): Promise<void> {
  const got = await receiver.receiveMessages(10, { maxWaitTimeInMs: waitMs });
  assert.equal(got.length, 0, `expected no message, got ${got.map((m) => String(m.messageId)).join(', ')}`);
}

/** Asserts that `action` rejects with a ServiceBusError carrying `code`. */
export async function assertServiceBusError(action: () => Promise<unknown>, code: string): Promise<void> {
  try {
    await action();
  } catch (err) {
    assert.ok(isServiceBusError(err), `expected ServiceBusError ${code}, got ${describeError(err)}`);
    assert.equal(err.code, code, `expected code ${code}, got ${err.code}: ${err.message}`);
    return;
  }
  assert.fail(`expected ServiceBusError ${code}, but the call succeeded`);
}

/** Asserts that an admin call rejects with an HTTP status (RestError.statusCode) and, optionally, its code. */
export async function assertRestError(
  action: () => Promise<unknown>,
  statusCode: number,
  code?: string,
): Promise<void> {
  try {
    await action();
  } catch (err) {
    const e = err as { statusCode?: number; code?: string; message?: string };
    assert.equal(e.statusCode, statusCode, `expected HTTP ${statusCode}, got ${describeError(err)}`);
    if (code !== undefined) assert.equal(e.code, code, `expected code ${code}, got ${e.code}`);
    return;
  }
  assert.fail(`expected HTTP ${statusCode}, but the call succeeded`);
}

export function describeError(err: unknown): string {
  if (err instanceof Error) {
    const e = err as Error & { code?: unknown; statusCode?: unknown };
    return `${e.name} code=${String(e.code)} status=${String(e.statusCode)}: ${e.message}`;
  }
  return String(err);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` until it returns a value that is not undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 8_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      assert.fail(`timed out waiting for ${what}${last ? ` (last error: ${describeError(last)})` : ''}`);
    }
    await sleep(100);
  }
}

/** Message ids of received messages, sorted, for set comparisons. */
export function idsOf(messages: ServiceBusReceivedMessage[]): string[] {
  return messages.map((m) => String(m.messageId)).sort();
}

/**
 * Receives the first message and asserts it arrived no earlier than `at` (a scheduled time), without relying
 * on how long the schedule call itself took on a busy machine.
 */
export async function receiveNotBefore(
  receiver: ServiceBusReceiver,
  at: Date,
  timeoutMs = 8_000,
): Promise<ServiceBusReceivedMessage> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) assert.fail(`no message by ${timeoutMs} ms after ${at.toISOString()}`);
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: Math.min(left, 2_000) });
    if (m) {
      // A little slack for clock reads on either side of the loopback connection.
      assert.ok(
        Date.now() >= at.getTime() - 50,
        `${String(m.messageId)} arrived ${at.getTime() - Date.now()} ms before its time`,
      );
      return m;
    }
  }
}
