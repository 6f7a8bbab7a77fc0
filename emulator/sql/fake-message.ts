// An in-memory MessageView for the engine's unit tests (pure logic; the broker has its own real view).
import { SqlError } from './api.ts';
import type { MessageView } from './api.ts';

const READ_ONLY = new Set(['sequencenumber', 'enqueuedtimeutc', 'deliverycount', 'size']);

export interface FakeMessage extends MessageView {
  readonly user: Map<string, unknown>;
  readonly system: Map<string, unknown>;
  /** How many times each getter ran, to check short-circuiting. */
  readonly reads: { count: number };
}

export function fakeMessage(
  user: Record<string, unknown> = {},
  system: Record<string, unknown> = {},
): FakeMessage {
  const userMap = new Map(Object.entries(user));
  const systemMap = new Map(Object.entries(system));
  const reads = { count: 0 };
  return {
    user: userMap,
    system: systemMap,
    reads,
    getSystem(name) {
      reads.count++;
      return systemMap.get(name);
    },
    setSystem(name, value) {
      if (READ_ONLY.has(name)) throw new SqlError(`sys.${name} is read-only`);
      systemMap.set(name, value);
    },
    getUser(name) {
      reads.count++;
      return userMap.get(name);
    },
    hasUser(name) {
      return userMap.has(name);
    },
    setUser(name, value) {
      userMap.set(name, value);
    },
    removeUser(name) {
      userMap.delete(name);
    },
  };
}
