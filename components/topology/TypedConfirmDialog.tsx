'use client';
// A confirmation for destructive or broad actions: the operator types the entity's name before the button
// enables. The server checks the same typed name, so the dialog is not the only guard.
// In the console's modal frame (ModalShell, as ConfirmDialog): focus trap, Escape, an inert page behind it; focus
// goes to the name field (data-autofocus) when it opens and back to whatever opened it when it closes.
import { useState, type ReactNode } from 'react';
import { ModalShell } from '../ModalShell.tsx';

export function TypedConfirmDialog(props: {
  title: string;
  expected: string;
  confirmLabel: string;
  busy?: boolean;
  children: ReactNode;
  onConfirm: (typed: string) => void;
  onCancel: () => void;
}) {
  const [typed, setTyped] = useState('');
  const ok = typed === props.expected;
  return (
    <ModalShell title={props.title} onCancel={props.onCancel}>
      <div className="mb-3 text-sm text-slate-700">{props.children}</div>
      <label className="mb-4 block text-sm">
        Type <code className="rounded bg-slate-100 px-1">{props.expected}</code> to confirm
        <input
          data-autofocus
          aria-label="Type the name to confirm"
          value={typed}
          onChange={(e) => setTyped(e.target.value)}
          className="mt-1 w-full rounded border border-slate-300 px-2 py-1 font-mono text-sm"
        />
      </label>
      <div className="flex justify-end gap-2">
        <button type="button" onClick={props.onCancel} className="rounded border border-slate-300 px-3 py-1.5 text-sm hover:bg-slate-50">
          Cancel
        </button>
        <button
          type="button"
          disabled={!ok || props.busy}
          onClick={() => props.onConfirm(typed)}
          className="rounded bg-red-600 px-3 py-1.5 text-sm font-medium text-white hover:bg-red-700 disabled:opacity-50"
        >
          {props.busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </ModalShell>
  );
}
