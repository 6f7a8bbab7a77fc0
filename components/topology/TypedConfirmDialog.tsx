'use client';
// A confirmation for destructive or broad actions: the operator types the entity's name before the button
// enables. The server checks the same typed name, so the dialog is not the only guard.
import { useEffect, useRef, useState, type ReactNode } from 'react';

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
  const inputRef = useRef<HTMLInputElement>(null);
  const { onCancel } = props;
  useEffect(() => {
    inputRef.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') onCancel();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onCancel]);
  const ok = typed === props.expected;
  return (
    <div className="fixed inset-0 z-50 flex items-center justify-center bg-slate-900/40" role="presentation">
      <div role="dialog" aria-modal="true" aria-labelledby="typed-confirm-title" className="w-full max-w-lg rounded-lg bg-white p-5 shadow-xl">
        <h2 id="typed-confirm-title" className="mb-2 text-lg font-semibold">
          {props.title}
        </h2>
        <div className="mb-3 text-sm text-slate-700">{props.children}</div>
        <label className="mb-4 block text-sm">
          Type <code className="rounded bg-slate-100 px-1">{props.expected}</code> to confirm
          <input
            ref={inputRef}
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
      </div>
    </div>
  );
}
