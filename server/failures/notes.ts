// Notes on failure groups ("known: CRM maintenance until 10:00"): one console document per group in the platform
// container, shown to everyone on the Failures page. Setting one is audited by the route (who, group, text).
import { z } from 'zod';
import type { PlatformDocs } from '../heartbeat/platformDocs.ts';

export const groupIdSchema = z.string().regex(/^[0-9a-f]{20}$/, 'a failure group id is 20 hex digits');
export const groupNoteBody = z.object({ note: z.string().trim().max(500) });

export interface GroupNote {
  note: string;
  by: string;
  at: string;
}

const docName = (groupId: string) => `groupnote_${groupId}`;

export async function groupNotes(docs: PlatformDocs): Promise<Map<string, GroupNote>> {
  const all = await docs.list<GroupNote>('groupnote_', 500);
  return new Map(all.filter((d) => d.value.note !== '').map((d) => [d.name.slice('groupnote_'.length), d.value]));
}

/** Sets (or with an empty text, clears) a group's note. */
export async function setGroupNote(docs: PlatformDocs, groupId: string, note: string, by: string): Promise<GroupNote> {
  const value: GroupNote = { note, by, at: new Date().toISOString() };
  await docs.write(docName(groupId), value);
  return value;
}
