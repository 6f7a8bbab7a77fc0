// The side-by-side payload diff (@codemirror/merge), in a chunk of its own: loaded when a diff is first shown
// (the edit dialog, or "Compare payloads" in the history), not with the event page.
import { MergeView } from '@codemirror/merge';
import type { EditorView } from '@codemirror/view';
import { editorExtensions, readOnlyExtensions } from './codemirror.ts';
import type { PayloadCheck } from './check.ts';

const MERGE = { highlightChanges: true, gutter: true, collapseUnchanged: { margin: 3, minSize: 6 } } as const;

/** A read-only diff of two payload texts: `a` left, `b` right. */
export function createDiff(parent: HTMLElement, a: { text: string; label: string }, b: { text: string; label: string }): MergeView {
  return new MergeView({
    ...MERGE,
    parent,
    a: { doc: a.text, extensions: readOnlyExtensions(a.label, true) },
    b: { doc: b.text, extensions: readOnlyExtensions(b.label, true) },
  });
}

/** The edit-and-resubmit editor: the stored payload read-only on the left, the edited one on the right, diffed live. */
export function createEditingDiff(
  parent: HTMLElement,
  original: { text: string; label: string },
  edited: { text: string; label: string },
  currentCheck: () => (text: string) => PayloadCheck,
  onText: (text: string) => void,
): { merge: MergeView; editor: EditorView } {
  const merge = new MergeView({
    highlightChanges: true,
    gutter: true,
    parent,
    a: { doc: original.text, extensions: readOnlyExtensions(original.label, true) },
    b: { doc: edited.text, extensions: editorExtensions(edited.label, currentCheck, onText) },
  });
  return { merge, editor: merge.b };
}

export { relint } from './codemirror.ts';
