// Stable message ids for copies the platform makes of a message (DESIGN.md §5): a parked copy and a replayed
// copy derive their MessageId from the message they copy, so a crash between "send the copy" and "complete the
// original" yields a second copy with the same id, which the inbox (or the blocking-event rule) recognizes.

/** Service Bus refuses MessageIds longer than this. */
export const MAX_MESSAGE_ID_LENGTH = 128;

export const CopyKind = {
  /** The copy sent to the Deferred subscription while the session is blocked or draining. */
  Parked: 'parked',
  /** The copy the deferred processor sends back to the endpoint. */
  Replayed: 'replayed',
} as const;
export type CopyKind = (typeof CopyKind)[keyof typeof CopyKind];

/**
 * `{sourceMessageId}~{kind}`; when that would exceed the MessageId limit (copies of copies grow), the source id
 * is replaced by a 64-bit FNV-1a hash of it, which is just as deterministic.
 */
export function derivedMessageId(sourceMessageId: string, kind: CopyKind): string {
  const plain = `${sourceMessageId}~${kind}`;
  if (plain.length <= MAX_MESSAGE_ID_LENGTH) return plain;
  return `h${fnv1a64(sourceMessageId)}~${kind}`;
}

/** 64-bit FNV-1a over the UTF-16 code units, as 16 lowercase hex digits. Not cryptographic: ids, not secrets. */
export function fnv1a64(text: string): string {
  let hash = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  const mask = 0xffffffffffffffffn;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * prime) & mask;
  }
  return hash.toString(16).padStart(16, '0');
}
