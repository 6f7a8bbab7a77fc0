// The console process's handles for the operations pages: the console-owned platform documents, the heartbeat
// service (settings, overview, Send now) and the replays running in this process. One set per process, kept on
// globalThis for the same reason as server/context.ts (Next.js may load a module once per route bundle).
import type { ConsoleContext } from '../context.ts';
import { PlatformDocs } from './platformDocs.ts';
import { HeartbeatService } from './scheduler.ts';

export interface OpsServices {
  docs: PlatformDocs;
  heartbeat: HeartbeatService;
  /** Replays started by this process and not finished yet (their progress is in the operation document too). */
  running: Map<string, Promise<unknown>>;
}

const KEY = Symbol.for('nimbus.console.ops');
type Slot = { services?: OpsServices; ctx?: ConsoleContext };
const slot = ((globalThis as Record<symbol, unknown>)[KEY] ??= {}) as Slot;

export function getOpsServices(ctx: ConsoleContext): OpsServices {
  // A reopened context (after a failed first open) gets fresh handles.
  if (!slot.services || slot.ctx !== ctx) {
    slot.services?.docs.close();
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
  const s = slot.services;
  slot.services = undefined;
  slot.ctx = undefined;
  if (!s) return;
  await Promise.all([...s.running.values()].map((p) => p.catch(() => undefined)));
  await s.heartbeat.close();
  s.docs.close();
}
