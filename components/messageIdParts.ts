// Message ids of the platform's copies read `{source}~parked~replayed` (derivedMessageId in the SDK's contract):
// exact, but hard to read. The event page shows the source id with the copies as a small tag; the exact id stays
// in the title and the copy button. A pure function, so the split is tested directly (messageIdParts.test.ts).
import { CopyKind } from '@nimbus/sdk/contract/names';

const KINDS: ReadonlySet<string> = new Set(Object.values(CopyKind));

/**
 * The id a copy was made from and the copies in the order they were made (`parked`, then `replayed`). `hashed`: the
 * source id was too long and replaced by its 64-bit hash (`h` and 16 hex digits), so it is not the source's own id.
 */
export function messageIdParts(id: string): { base: string; copies: string[]; hashed: boolean } {
  const parts = id.split('~');
  let end = parts.length;
  while (end > 1 && KINDS.has(parts[end - 1] ?? '')) end--;
  const base = parts.slice(0, end).join('~');
  if (base === '') return { base: id, copies: [], hashed: false }; // no source id before the copies: not a copy id
  const copies = parts.slice(end);
  return { base, copies, hashed: copies.length > 0 && /^h[0-9a-f]{16}$/.test(base) };
}
