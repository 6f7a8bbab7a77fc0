// The CodeMirror side of the payload views, loaded with a dynamic import() only where a payload is shown (the event
// page), so no other page's bundle carries CodeMirror. Payload text goes into CodeMirror documents, which render it
// as text nodes: nothing of a payload ever becomes markup.
// Colours are CSS variables (--payload-*, defined once in app/globals.css), so a dark theme overrides them there.
import { json } from '@codemirror/lang-json';
import { HighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { forceLinting, linter, lintGutter, type Diagnostic } from '@codemirror/lint';
import { EditorState, type Extension } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { tags } from '@lezer/highlight';
import { basicSetup } from 'codemirror';
import type { PayloadCheck } from './check.ts';

const highlight = HighlightStyle.define([
  { tag: tags.propertyName, color: 'var(--payload-key)' },
  { tag: tags.string, color: 'var(--payload-string)' },
  { tag: tags.number, color: 'var(--payload-number)' },
  { tag: [tags.bool, tags.null], color: 'var(--payload-literal)' },
  { tag: [tags.brace, tags.squareBracket, tags.separator, tags.punctuation], color: 'var(--payload-punctuation)' },
]);

const theme = EditorView.theme({
  '&': { backgroundColor: 'var(--payload-bg)', color: 'var(--payload-fg)', fontSize: '12px', height: '100%' },
  '&.cm-focused': { outline: '2px solid var(--payload-focus)', outlineOffset: '-2px' },
  '.cm-scroller': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', lineHeight: '1.5' },
  '.cm-content': { caretColor: 'var(--payload-fg)' },
  '.cm-cursor, .cm-dropCursor': { borderLeftColor: 'var(--payload-fg)' },
  '.cm-gutters': { backgroundColor: 'var(--payload-gutter-bg)', color: 'var(--payload-gutter-fg)', borderRight: '1px solid var(--payload-border)' },
  '.cm-activeLine': { backgroundColor: 'var(--payload-active-line)' },
  '.cm-activeLineGutter': { backgroundColor: 'var(--payload-active-line)' },
  '&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground': {
    backgroundColor: 'var(--payload-selection)',
  },
  '.cm-foldPlaceholder': { backgroundColor: 'var(--payload-gutter-bg)', border: '1px solid var(--payload-border)', color: 'var(--payload-fg)' },
  '.cm-lintRange-error': { backgroundImage: 'none', textDecoration: 'underline wavy var(--payload-error)' },
  '.cm-diagnostic-error': { borderLeftColor: 'var(--payload-error)' },
  '.cm-tooltip': { backgroundColor: 'var(--payload-bg)', color: 'var(--payload-fg)', border: '1px solid var(--payload-border)' },
  // The merge view's change colours (its defaults are fixed light-theme colours).
  '&.cm-merge-a .cm-changedLine, .cm-deletedChunk': { backgroundColor: 'var(--payload-removed-bg)' },
  '&.cm-merge-b .cm-changedLine, .cm-inlineChangedLine': { backgroundColor: 'var(--payload-added-bg)' },
  '&.cm-merge-a .cm-changedText, .cm-deletedChunk .cm-deletedText': { background: 'var(--payload-removed-text-bg)' },
  '&.cm-merge-b .cm-changedText': { background: 'var(--payload-added-text-bg)' },
  '&.cm-merge-a .cm-changedLineGutter, .cm-deletedLineGutter': { background: 'var(--payload-removed-mark)' },
  '&.cm-merge-b .cm-changedLineGutter': { background: 'var(--payload-added-mark)' },
});

/** What every payload view has: line numbers, folding, search, bracket matching, the colours. */
function common(label: string, isJson: boolean): Extension[] {
  return [
    basicSetup,
    isJson ? json() : [],
    syntaxHighlighting(highlight),
    theme,
    EditorView.lineWrapping,
    // The content element is the textbox a screen reader announces: it needs its name.
    EditorView.contentAttributes.of({ 'aria-label': label }),
  ];
}

/** Extensions of a read-only payload (selectable, foldable, searchable; not editable). */
export function readOnlyExtensions(label: string, isJson: boolean): Extension[] {
  return [common(label, isJson), EditorState.readOnly.of(true)];
}

/** A read-only view of a payload in `parent`. */
export function createViewer(parent: HTMLElement, text: string, opts: { label: string; json: boolean }): EditorView {
  return new EditorView({ parent, state: EditorState.create({ doc: text, extensions: readOnlyExtensions(opts.label, opts.json) }) });
}

/**
 * Extensions of the payload editor: JSON language, and a linter showing the same problems the dialog lists
 * (syntax with line and column, then the schema's). `currentCheck` is read on every lint run, so a change of the
 * event type (another schema) takes effect with `relint`.
 */
export function editorExtensions(
  label: string,
  currentCheck: () => (text: string) => PayloadCheck,
  onText: (text: string) => void,
): Extension[] {
  return [
    common(label, true),
    lintGutter(),
    linter(
      (view): Diagnostic[] =>
        currentCheck()(view.state.doc.toString()).problems.map((p) => ({
          from: Math.min(p.from, view.state.doc.length),
          to: Math.min(p.to, view.state.doc.length),
          severity: 'error',
          message: p.message,
        })),
      { delay: 150 },
    ),
    EditorView.updateListener.of((u) => {
      if (u.docChanged) onText(u.state.doc.toString());
    }),
  ];
}

export function relint(view: EditorView): void {
  forceLinting(view);
}
