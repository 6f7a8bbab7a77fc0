'use client';
// Keyboard shortcuts for the whole console (rules in keys.ts) and the `?` overlay that lists them. One keydown
// listener on the document; keys typed in fields and editors, keys with Ctrl/Alt/Meta and keys pressed while a
// dialog is open are left alone. Resubmit and skip press the event page's own buttons, which ask for confirmation
// in their dialog; nothing is sent from here.
import { useRouter } from 'next/navigation';
import { useEffect, useRef, useState } from 'react';
import { isTyping, SHORTCUTS, stepKey, type ShortcutAction } from './keys.ts';

const SEQUENCE_MS = 1500;

/**
 * The rows of the main content's tables that are shown, for j/k. Not the charts' legends: uPlot draws each as a
 * table (`.u-legend`) above the event list, and j stepped through their series first.
 */
function listRows(): HTMLTableRowElement[] {
  return Array.from(document.querySelectorAll<HTMLTableRowElement>('main table:not(.u-legend) tbody tr')).filter((r) => r.getClientRects().length > 0 && r.cells.length > 1);
}

function moveInList(delta: 1 | -1): void {
  const rows = listRows();
  if (rows.length === 0) return;
  const marked = rows.findIndex((r) => r.hasAttribute('data-kbd-current'));
  const focused = rows.findIndex((r) => r.contains(document.activeElement));
  const from = focused >= 0 ? focused : marked;
  const next = from < 0 ? (delta === 1 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, from + delta));
  for (const r of rows) r.removeAttribute('data-kbd-current');
  const row = rows[next]!;
  row.setAttribute('data-kbd-current', '');
  // Focus the row's first link, so Enter opens it; a row without one takes focus itself.
  const link = row.querySelector<HTMLElement>('a[href]');
  if (link) link.focus();
  else {
    row.tabIndex = -1;
    row.focus();
  }
  row.scrollIntoView({ block: 'nearest' });
}

/** Presses the enabled button of the main content whose name is exactly `name` (the event page's Resubmit / Skip). */
function pressButton(name: string): void {
  const button = Array.from(document.querySelectorAll<HTMLButtonElement>('main button')).find(
    (b) => !b.disabled && b.textContent?.trim() === name && b.getClientRects().length > 0,
  );
  button?.click();
}

function modalOpen(): boolean {
  return document.querySelector('dialog[open], [role="dialog"], [aria-modal="true"]') !== null;
}

export function KeyboardShortcuts() {
  const router = useRouter();
  const [helpOpen, setHelpOpen] = useState(false);
  const helpRef = useRef<HTMLDialogElement>(null);

  useEffect(() => {
    let pendingG = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = (action: ShortcutAction) => {
      switch (action) {
        case 'help':
          return setHelpOpen(true);
        case 'search':
          return document.querySelector<HTMLInputElement>('[role="search"] input')?.focus();
        case 'go-endpoints':
          return router.push('/');
        case 'go-monitor':
          return router.push('/monitor');
        case 'next':
          return moveInList(1);
        case 'previous':
          return moveInList(-1);
        case 'resubmit':
          return pressButton('Resubmit');
        case 'skip':
          return pressButton('Skip');
      }
    };
    const onKeyDown = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
      if (isTyping(e.target instanceof HTMLElement ? e.target : null) || modalOpen()) {
        pendingG = false;
        return;
      }
      const step = stepKey(e.key, pendingG);
      pendingG = step.pendingG;
      clearTimeout(timer);
      if (pendingG) timer = setTimeout(() => (pendingG = false), SEQUENCE_MS);
      if (step.action === null) return;
      e.preventDefault(); // `/` must not also type itself into the search field it focuses
      run(step.action);
    };
    document.addEventListener('keydown', onKeyDown);
    return () => {
      document.removeEventListener('keydown', onKeyDown);
      clearTimeout(timer);
    };
  }, [router]);

  useEffect(() => {
    const dialog = helpRef.current;
    if (helpOpen && dialog && !dialog.open) dialog.showModal();
  }, [helpOpen]);

  if (!helpOpen) return null;
  return (
    <dialog
      ref={helpRef}
      aria-labelledby="shortcuts-title"
      onClose={() => setHelpOpen(false)}
      onKeyDown={(e) => {
        if (e.key === '?') helpRef.current?.close();
      }}
      data-testid="shortcuts-help"
      className="m-auto w-full max-w-md rounded-lg bg-white p-5 text-slate-900 shadow-xl backdrop:bg-slate-900/40"
    >
      <h2 id="shortcuts-title" className="mb-3 text-lg font-semibold">
        Keyboard shortcuts
      </h2>
      <table className="w-full text-sm">
        <caption className="sr-only">Keys and what they do</caption>
        <thead className="sr-only">
          <tr>
            <th scope="col">Keys</th>
            <th scope="col">Action</th>
          </tr>
        </thead>
        <tbody>
          {SHORTCUTS.map((s) => (
            <tr key={s.action} className="border-t border-slate-200">
              <td className="py-1.5 pr-4 whitespace-nowrap">
                {s.keys.map((k, i) => (
                  <span key={i}>
                    {i > 0 && <span className="px-1 text-slate-600">then</span>}
                    <kbd className="rounded border border-slate-300 bg-slate-50 px-1.5 py-0.5 font-mono text-xs">{k}</kbd>
                  </span>
                ))}
              </td>
              <td className="py-1.5">{s.label}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="mt-3 text-xs text-slate-600">Shortcuts do nothing while you type in a field or an editor.</p>
      <div className="mt-4 flex justify-end">
        <button type="button" autoFocus onClick={() => helpRef.current?.close()} className="rounded border border-slate-300 px-3 py-1.5 text-sm hover:bg-slate-50">
          Close
        </button>
      </div>
    </dialog>
  );
}
