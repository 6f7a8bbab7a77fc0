'use client';
// "Resubmit with changes": the stored payload (read-only, left) and the edited one (right) side by side with the
// changes marked as you type; the edited JSON is checked as you type - syntax errors at their line and column, then
// the chosen event type's JSON Schema from the catalog - and the Resubmit button stays disabled until it passes, so
// nothing the server would refuse is sent (the server checks again). In the console's modal frame (ModalShell: a
// native <dialog>, focus trap, Escape, inert page behind; focus returns to the opener when it closes). A send that
// fails shows its error inside the dialog, which stays open with the edit as it was - also when the event moved on
// and can no longer be resubmitted (`unavailable`: sending is disabled and the dialog says why), and when the
// stored payload changed meanwhile (the diff stays against the payload the dialog opened with).
import { useEffect, useMemo, useRef, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { CommandUnavailable, EventChanged } from '../ConfirmDialog.tsx';
import { ErrorBox } from '../format.tsx';
import { ModalShell } from '../ModalShell.tsx';
import { useFocusAwayWhenUnavailable } from '../useFocusAwayWhenUnavailable.ts';
import { eventTypesQuery } from '../queries.ts';
import { sameJson } from './sameJson.ts';
import { schemaNote } from './schemaNote.ts';
import type { CompiledSchema, PayloadCheck } from './check.ts';
// Types only (erased): the modules themselves are loaded with import() when the dialog opens.
// The checker (zod, the catalog schema code) is a chunk of its own, so the read-only payload view does not load it.
import type * as CheckModule from './check.ts';
import type * as DiffModule from './diff.ts';

type Check = typeof CheckModule;
type Diff = typeof DiffModule;

const EDITOR_LABEL = 'Edited payload (JSON)';

export function EditResubmitDialog(props: {
  /** The stored payload, indented JSON (or the raw text of a malformed one); null when none is stored. */
  originalText: string | null;
  initialEventTypeId: string;
  typeOptions: string[];
  busy: boolean;
  /** Why the last send failed (shown in the dialog), or nothing. */
  error?: unknown;
  /**
   * After a send refused because the event had changed since the dialog opened: what it now is (the edit stays, and
   * sending again acts on that state).
   */
  changed?: string | null;
  /** Why the event can no longer be resubmitted (it moved on): said in the dialog, and sending is disabled. */
  unavailable?: string | null;
  onCancel: () => void;
  onSubmit: (payload: unknown, eventTypeId: string) => void;
}) {
  const host = useRef<HTMLDivElement>(null);
  // The stored payload as the dialog opened with it: the event is read again behind the dialog (a timed refresh,
  // or at once after a refused send), and a payload changed meanwhile (another operator's edited resubmit) must
  // not recreate the editor, which would throw away the operator's edit (nor change what counts as "no change").
  const [originalText] = useState(props.originalText);
  const [initialEventTypeId] = useState(props.initialEventTypeId);
  const [modules, setModules] = useState<{ check: Check; diff: Diff } | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [text, setText] = useState(originalText ?? '');
  const [eventTypeId, setEventTypeId] = useState(initialEventTypeId);
  const types = useQuery(eventTypesQuery());

  // The schema of the chosen type, compiled once per type (null: the type has none; undefined: not loaded yet).
  const schema: CompiledSchema | undefined = useMemo(() => {
    if (!modules) return undefined;
    if (types.error) return null; // the catalog could not be read: the server's check still applies
    if (!types.data) return undefined;
    return modules.check.compileSchema(types.data.eventTypes.find((t) => t.id === eventTypeId)?.schema);
  }, [modules, types.data, types.error, eventTypeId]);
  const hasSchema = schema !== undefined && schema !== null;
  const check: PayloadCheck | undefined = useMemo(
    () => (modules && schema !== undefined ? modules.check.checkPayloadText(text, schema, eventTypeId) : undefined),
    [modules, schema, text, eventTypeId],
  );
  // The linter inside the editor reads the current check through this ref (the editor is created once).
  const checkRef = useRef<(t: string) => PayloadCheck>(() => ({ ok: false, problems: [] }));
  useEffect(() => {
    if (modules && schema !== undefined) checkRef.current = (t) => modules.check.checkPayloadText(t, schema, eventTypeId);
  }, [modules, schema, eventTypeId]);

  useEffect(() => {
    Promise.all([import('./check.ts'), import('./diff.ts')]).then(
      ([check, diff]) => setModules({ check, diff }),
      (err: unknown) => setLoadError(err instanceof Error ? err.message : String(err)),
    );
  }, []);

  // The editor, once the modules are in; created once (typing must not recreate it).
  const editorRef = useRef<ReturnType<Diff['createEditingDiff']> | null>(null);
  useEffect(() => {
    if (!modules || !host.current || editorRef.current) return;
    const created = modules.diff.createEditingDiff(
      host.current,
      { text: originalText ?? '', label: 'Stored payload (read-only)' },
      { text: originalText ?? '', label: EDITOR_LABEL },
      () => checkRef.current,
      setText,
    );
    editorRef.current = created;
    created.editor.focus();
    return () => {
      created.merge.destroy();
      editorRef.current = null;
    };
    // Created once per opening: originalText is the payload the dialog opened with.
  }, [modules, originalText]);
  // Another event type, another schema: the underlines follow.
  useEffect(() => {
    if (editorRef.current && modules) modules.diff.relint(editorRef.current.editor);
  }, [schema, modules]);

  const ready = check !== undefined;
  const problems = check && !check.ok ? check.problems : [];
  // The stored payload as parsed JSON (none when it is not JSON or absent: then any valid edit is a change).
  const original = useMemo((): { value: unknown } | null => {
    if (originalText === null) return null;
    try {
      return { value: JSON.parse(originalText) as unknown };
    } catch {
      return null;
    }
  }, [originalText]);
  // The same JSON (layout and member order aside) under the same event type is a plain Resubmit, not a change:
  // sending it would be audited as ResubmitWithChanges for nothing.
  const unchanged = check !== undefined && check.ok && original !== null && eventTypeId === initialEventTypeId && sameJson(check.value, original.value);
  const unavailable = Boolean(props.unavailable);
  const canSend = ready && check.ok && !unchanged && !props.busy && !unavailable && eventTypeId !== '';
  const sendRef = useRef<HTMLButtonElement>(null);
  const cancelRef = useRef<HTMLButtonElement>(null);
  useFocusAwayWhenUnavailable(unavailable, sendRef, cancelRef);
  const selectedType = types.data?.eventTypes.find((t) => t.id === eventTypeId);

  return (
    <ModalShell title="Resubmit with changes" width="5xl" onCancel={props.onCancel}>
      <div className="mb-2 flex flex-wrap items-center gap-2 text-sm text-slate-600">
        <label className="flex items-center gap-2">
          Event type
          <select
            aria-label="Event type"
            value={eventTypeId}
            onChange={(x) => setEventTypeId(x.target.value)}
            className="rounded border border-slate-300 px-1 py-0.5 text-sm text-slate-800"
          >
            {props.typeOptions.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <span className="text-xs text-slate-500" data-testid="schema-note">
          {schemaNote({
            catalogError: Boolean(types.error),
            catalogLoaded: types.data !== undefined,
            schema: schema === undefined ? 'pending' : schema === null ? 'none' : 'schema',
            eventTypeId,
          })}
        </span>
        {selectedType?.description ? <span className="text-xs text-slate-500">{selectedType.description}</span> : null}
      </div>
      <div className="mb-1 grid grid-cols-2 gap-2 text-xs text-slate-500" aria-hidden="true">
        <span>Stored payload (read-only)</span>
        <span>Edited payload</span>
      </div>
      <div ref={host} data-testid="edit-diff" className="h-[22rem] overflow-auto rounded border border-slate-200">
        {modules ? null : <p className="p-3 text-sm text-slate-500">{loadError ? `The editor could not load: ${loadError}` : 'Loading the editor…'}</p>}
      </div>
      <div role="status" data-testid="edit-problems" className="mt-2 min-h-[1.25rem] text-xs">
        {!ready ? null : problems.length > 0 ? (
          <ul className="space-y-0.5 text-red-700">
            {problems.slice(0, 6).map((p, i) => (
              <li key={i}>{p.message}</li>
            ))}
            {problems.length > 6 ? <li>…and {problems.length - 6} more</li> : null}
          </ul>
        ) : (
          <span className="text-emerald-700">
            <span>Valid JSON</span>
            {hasSchema ? <span> · matches the {eventTypeId} schema</span> : null}
          </span>
        )}
      </div>
      {props.error ? (
        <div className="mt-2">
          <ErrorBox error={props.error} />
        </div>
      ) : null}
      {props.changed ? <EventChanged text={props.changed} /> : null}
      {props.unavailable ? (
        <div className="mt-2">
          <CommandUnavailable reason={props.unavailable} />
        </div>
      ) : null}
      <div className="mt-3 flex items-center justify-end gap-2">
        {unchanged ? (
          <span data-testid="edit-unchanged" className="mr-auto text-xs text-slate-600">
            No changes: this is the stored payload. Edit it, choose another event type, or use Resubmit.
          </span>
        ) : null}
        <button ref={cancelRef} type="button" onClick={props.onCancel} className="rounded border border-slate-300 px-3 py-1.5 text-sm hover:bg-slate-50">
          Cancel
        </button>
        <button
          ref={sendRef}
          type="button"
          disabled={!canSend}
          onClick={() => {
            // Checked once more on the text as it is now: what is sent is exactly what passed.
            if (!modules || schema === undefined || !editorRef.current) return;
            const now = modules.check.checkPayloadText(editorRef.current.editor.state.doc.toString(), schema, eventTypeId);
            if (now.ok) props.onSubmit(now.value, eventTypeId);
          }}
          className="rounded bg-sky-600 px-3 py-1.5 text-sm font-medium text-white hover:bg-sky-700 disabled:opacity-40"
        >
          {props.busy ? 'Working…' : 'Resubmit edited payload'}
        </button>
      </div>
    </ModalShell>
  );
}
