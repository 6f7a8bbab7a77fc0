// Shared helpers for the broker's unit tests: a controllable clock, small message builders and a temporary data
// directory.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WireMessage } from './api.ts';
import { createServiceBusBroker } from './index.ts';
import type { ServiceBusBroker } from './broker.ts';
import type { BrokerOptions } from './api.ts';

export class FakeClock {
  constructor(public t = 1_700_000_000_000) {}
  readonly now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

export function msg(fields: Partial<WireMessage> & { props?: Record<string, unknown> } = {}): WireMessage {
  const { props, ...rest } = fields;
  const m = { body: 'payload', ...rest } as WireMessage;
  if (props) m.application_properties = { ...props };
  return m;
}

export async function brokerWithClock(
  options: BrokerOptions = {},
): Promise<{ broker: ServiceBusBroker; clock: FakeClock }> {
  const clock = new FakeClock();
  const broker = await createServiceBusBroker({ now: clock.now, ...options });
  return { broker, clock };
}

/** Moves the clock and runs whatever became due. */
export function tick(broker: ServiceBusBroker, clock: FakeClock, ms: number): void {
  clock.advance(ms);
  broker.runDueWork();
}

export function props(d: { message: WireMessage }): Record<string, unknown> {
  return (d.message.application_properties ?? {}) as Record<string, unknown>;
}

/** Runs `body` on a fresh data directory (`prefix` and a random tail, in the OS's temp folder), removed afterwards. */
export async function inTempDir(prefix: string, body: (dir: string) => void | Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    await body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
