// Cosmos document ids derived from our ids. Cosmos forbids / \ ? # in ids and caps them at 255 characters,
// while session ids and message ids are free text, so every character outside [A-Za-z0-9-] is escaped as
// ~XX (UTF-8 bytes). The escape never produces "_", which therefore separates the parts unambiguously.
import { createHash } from 'node:crypto';

const MAX_ID = 255;

function escapePart(s: string): string {
  return s.replace(/[^A-Za-z0-9-]/gu, (ch) =>
    Array.from(Buffer.from(ch, 'utf8'), (b) => `~${b.toString(16).padStart(2, '0').toUpperCase()}`).join(''),
  );
}

/** Deterministic, collision-free id for a tuple of strings; hashed (still deterministic) when it would be too long. */
export function docId(...parts: string[]): string {
  const id = parts.map(escapePart).join('_');
  if (id.length <= MAX_ID) return id;
  return `h_${createHash('sha256').update(JSON.stringify(parts)).digest('hex')}`;
}

/** Status row id: one row per event and session (an event id can in principle recur in two sessions). */
export const statusRowId = (eventId: string, sessionId: string): string => docId(eventId, sessionId);
