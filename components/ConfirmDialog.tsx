'use client';
// A modal confirmation that states exactly what will happen, in the console's modal frame (ModalShell: native
// <dialog>, focus trap, Escape, an inert page behind it). Focus goes in once when it opens (to a field marked
// data-autofocus, else the confirm button) and back to whatever opened it when it closes. `busy` means the
// confirmed action is under way ("Working…"); `disabled` means there is nothing to confirm (the label stays).
import { useRef, type ReactNode } from 'react';
import { ModalShell } from './ModalShell.tsx';

export function ConfirmDialog(props: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  /** The confirm button cannot be pressed, with its label unchanged (e.g. a preview with nothing to do). */
  disabled?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const confirmRef = useRef<HTMLButtonElement>(null);
  return (
    <ModalShell title={props.title} onCancel={props.onCancel} initialFocus={() => confirmRef.current}>
      <div className="mb-4 text-sm text-slate-700">{props.children}</div>
      <div className="flex justify-end gap-2">
        <button type="button" onClick={props.onCancel} className="rounded border border-slate-300 px-3 py-1.5 text-sm hover:bg-slate-50">
          Cancel
        </button>
        <button
          ref={confirmRef}
          type="button"
          disabled={props.busy || props.disabled}
          onClick={props.onConfirm}
          className={`rounded px-3 py-1.5 text-sm font-medium text-white disabled:opacity-50 ${props.danger ? 'bg-red-600 hover:bg-red-700' : 'bg-sky-600 hover:bg-sky-700'}`}
        >
          {props.busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </ModalShell>
  );
}
