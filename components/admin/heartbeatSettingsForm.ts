// The Health page's settings form as data, apart from React: the operator's edits, what the server held when each
// field was first edited (the base), which version a save names, and how a refused save (409) is sorted out.
// Pure, so the rules are tested without a browser.

export type SettingsField = 'enabled' | 'intervalSeconds' | 'timeoutSeconds';
export const SETTINGS_FIELDS: readonly SettingsField[] = ['enabled', 'intervalSeconds', 'timeoutSeconds'];

/** The server's settings as the page reads them (GET /api/admin/health `settings`). */
export interface ServerSettings {
  enabled: boolean;
  intervalSeconds: number;
  timeoutSeconds: number;
  version: string;
}

/** The fields the operator changed, as typed (numbers stay strings until Save). */
export type Draft = { enabled?: boolean; intervalSeconds?: string; timeoutSeconds?: string };

/** The version read when editing began and each edited field's server value at its first edit. */
export interface Base {
  version: string;
  values: Partial<Pick<ServerSettings, SettingsField>>;
}

export interface Edits {
  draft: Draft;
  base: Base | null;
}

/** An edited field another save changed meanwhile: the server's value now, and the operator's to re-apply. */
export interface ConflictingField {
  field: SettingsField;
  theirs: boolean | number;
  yours: boolean | string;
}

export const NO_EDITS: Edits = { draft: {}, base: null };

/** One field edited; its base is the server value the form showed for it until now. */
export function edit<F extends SettingsField>(edits: Edits, server: ServerSettings, field: F, value: NonNullable<Draft[F]>): Edits {
  return editField(edits, server, field, value);
}

function editField(edits: Edits, server: ServerSettings, field: SettingsField, value: boolean | string): Edits {
  const base = edits.base ?? { version: server.version, values: {} };
  return {
    draft: { ...edits.draft, [field]: value },
    base: field in base.values ? base : { ...base, values: { ...base.values, [field]: server[field] } },
  };
}

/**
 * The version Save names. When no edited field has moved on the server since it was edited, the page has seen
 * everything up to the version it shows now, so that one (another Owner's change to an untouched field is shown,
 * not overwritten: the save sends only the edited fields). Otherwise the version editing began from: the server
 * then refuses the save (409) and the page sorts the fields out.
 */
export function versionToSend(edits: Edits, server: ServerSettings): string {
  if (!edits.base) return server.version;
  const moved = SETTINGS_FIELDS.some((f) => f in edits.base!.values && edits.base!.values[f] !== server[f]);
  return moved ? edits.base.version : server.version;
}

/** The body of PUT /api/admin/heartbeat/settings: the edited fields and the version they are based on. */
export function saveBody(edits: Edits, server: ServerSettings): { enabled?: boolean; intervalSeconds?: number; timeoutSeconds?: number; version: string } {
  const d = edits.draft;
  return {
    ...(d.enabled !== undefined ? { enabled: d.enabled } : {}),
    ...(d.intervalSeconds !== undefined ? { intervalSeconds: Number(d.intervalSeconds) } : {}),
    ...(d.timeoutSeconds !== undefined ? { timeoutSeconds: Number(d.timeoutSeconds) } : {}),
    version: versionToSend(edits, server),
  };
}

/**
 * After a 409, with the server's values read again: an edited field the other save changed leaves the form (it
 * shows the server's value) and is returned to re-apply; the others stay edited, now based on the fresh read.
 */
export function afterConflict(edits: Edits, fresh: ServerSettings): { edits: Edits; conflicts: ConflictingField[] } {
  const draft: Draft = {};
  const values: Base['values'] = {};
  const conflicts: ConflictingField[] = [];
  for (const f of SETTINGS_FIELDS) {
    const yours = edits.draft[f];
    if (yours === undefined) continue;
    const seen = edits.base?.values[f];
    if (seen !== undefined && seen !== fresh[f]) {
      conflicts.push({ field: f, theirs: fresh[f], yours });
    } else {
      Object.assign(draft, { [f]: yours });
      Object.assign(values, { [f]: fresh[f] });
    }
  }
  const kept = Object.keys(draft).length > 0;
  return { edits: kept ? { draft, base: { version: fresh.version, values } } : NO_EDITS, conflicts };
}

/** Puts the operator's refused edits back into the form, based on the server's values now. */
export function reapply(edits: Edits, server: ServerSettings, conflicts: ConflictingField[]): Edits {
  let next = edits;
  for (const c of conflicts) next = editField(next, server, c.field, c.yours);
  return next;
}
