// The console process's handles for the operations pages: the console-owned platform documents, the heartbeat
// service (settings, overview, Send now) and the replays running in this process. One set per process, kept on
// globalThis for the same reason as server/context.ts (Next.js may load a module once per route bundle).
import type { ConsoleContext } from '../context.ts';
import type { ServiceBusClients } from '@nimbus/sdk/servicebus';
import { PlatformDocs } from './platformDocs.ts';
import { HeartbeatService, startHeartbeatScheduler } from './scheduler.ts';

export interface OpsServices {
  docs: PlatformDocs;
  heartbeat: HeartbeatService;
  /** Replays started by this process and not finished yet (their progress is in the operation document too). */
  running: Map<string, Promise<unknown>>;
  /** The no-retry client replays send on (server/subscriptions/routes.ts): opened by the first replay, closed with these. */
  replaySend?: ServiceBusClients;
}

const KEY = Symbol.for('nimbus.console.ops');
type Slot = { services?: OpsServices; ctx?: ConsoleContext };
const slot = ((globalThis as Record<symbol, unknown>)[KEY] ??= {}) as Slot;

export function getOpsServices(ctx: ConsoleContext): OpsServices {
  // A reopened context (after a failed first open) gets fresh handles.
  if (!slot.services || slot.ctx !== ctx) {
    slot.services?.docs.close();
    void slot.services?.replaySend?.close().catch(() => undefined);
    const docs = new PlatformDocs(ctx.config.cosmos);
    slot.services = {
      docs,
      heartbeat: new HeartbeatService({ store: ctx.store, client: ctx.serviceBus.client, catalog: ctx.catalog, docs }),
      running: new Map(),
    };
    slot.ctx = ctx;
  }
  return slot.services;
}

/** Releases the handles (the launcher's shutdown, the end of a test). */
export async function closeOpsServices(): Promise<void> {
  // The operations runner writes through these documents: it stops first.
  await (await import('../operations/service.ts')).stopOperations();
  const s = slot.services;
  slot.services = undefined;
  slot.ctx = undefined;
  if (!s) return;
  await Promise.all([...s.running.values()].map((p) => p.catch(() => undefined)));
  await s.heartbeat.close();
  await s.replaySend?.close().catch(() => undefined);
  s.docs.close();
}

/**
 * Starts the heartbeat scheduler for this console process on the console's own connections (the launcher calls
 * this after startConsole; every replica may: the send claims make one of them send per interval).
 */
export async function startConsoleHeartbeat(
  env: Record<string, string | undefined> = process.env,
  options: { tickMs?: number } = {},
): Promise<{ stop(): Promise<void> }> {
  const { getContext } = await import('../context.ts');
  const ctx = await getContext(env);
  const { docs } = getOpsServices(ctx);
  const scheduler = startHeartbeatScheduler({ store: ctx.store, client: ctx.serviceBus.client, catalog: ctx.catalog, docs, ...options });
  return { stop: () => scheduler.stop() };
}
