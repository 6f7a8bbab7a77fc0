'use client';
// A modal confirmation that states exactly what will happen. The native <dialog> opened with showModal() gives the
// focus trap, Escape and an inert page behind it; focus goes in once when it opens (to a field marked
// data-autofocus, else the confirm button) and back to whatever opened it when it closes. `busy` means the
// confirmed action is under way ("Working…"); `disabled` means there is nothing to confirm (the label stays).
import { useRef, type ReactNode } from 'react';
import { useModalDialog } from './useModalDialog.ts';

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
  const dialogRef = useRef<HTMLDialogElement>(null);
  const confirmRef = useRef<HTMLButtonElement>(null);
  useModalDialog(dialogRef, props.onCancel, () => confirmRef.current);

  return (
    <dialog
      ref={dialogRef}
      aria-labelledby="confirm-title"
      className="m-auto w-full max-w-lg rounded-lg bg-white p-5 text-slate-900 shadow-xl backdrop:bg-slate-900/40"
    >
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
          disabled={props.busy || props.disabled}
          onClick={props.onConfirm}
          className={`rounded px-3 py-1.5 text-sm font-medium text-white disabled:opacity-50 ${props.danger ? 'bg-red-600 hover:bg-red-700' : 'bg-sky-600 hover:bg-sky-700'}`}
        >
          {props.busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
