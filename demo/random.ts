// Seeded randomness for the demo traffic: the same seed gives the same sequence of events, so tests and bug
// reports can reproduce what the demo did. Not for anything security-related.
import { createHash } from 'node:crypto';

/** A small, fast PRNG (mulberry32) returning U[0,1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A stable bucket in [0, modulo) for an identifier. Handlers use it to decide behaviour from the data itself (an
 * order id), so the outcome does not depend on which process or delivery handles the message.
 */
export function bucketOf(id: string, modulo: number): number {
  return createHash('sha256').update(id).digest().readUInt32BE(0) % modulo;
}

export function pick<T>(random: () => number, items: readonly T[]): T {
  const item = items[Math.floor(random() * items.length)];
  if (item === undefined) throw new Error('pick from an empty list');
  return item;
}
