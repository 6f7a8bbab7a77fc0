'use client';
// A modal confirmation that states exactly what will happen; Escape or Cancel closes it.
import { useEffect, useRef, type ReactNode } from 'react';

export function ConfirmDialog(props: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    confirmRef.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') props.onCancel();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [props]);
  return (
    <div className="fixed inset-0 z-50 flex items-center justify-center bg-slate-900/40" role="presentation">
      <div role="dialog" aria-modal="true" aria-labelledby="confirm-title" className="w-full max-w-lg rounded-lg bg-white p-5 shadow-xl">
        <h2 id="confirm-title" className="mb-2 text-lg font-semibold">
          {props.title}
        </h2>
        <div className="mb-4 text-sm text-slate-700">{props.children}</div>
        <div className="flex justify-end gap-2">
          <button type="button" onClick={props.onCancel} className="rounded border border-slate-300 px-3 py-1.5 text-sm hover:bg-slate-50">
            Cancel
          </button>
          <button
            ref={confirmRef}
            type="button"
            disabled={props.busy}
            onClick={props.onConfirm}
            className={`rounded px-3 py-1.5 text-sm font-medium text-white disabled:opacity-50 ${props.danger ? 'bg-red-600 hover:bg-red-700' : 'bg-sky-600 hover:bg-sky-700'}`}
          >
            {props.busy ? 'Working…' : props.confirmLabel}
          </button>
        </div>
      </div>
    </div>
  );
}
