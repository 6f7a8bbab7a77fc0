'use client';
// A modal confirmation that states exactly what will happen. The native <dialog> opened with showModal() gives the
// focus trap, Escape and an inert page behind it; focus goes in once when it opens (to a field marked
// data-autofocus, else the confirm button) and back to whatever opened it when it closes.
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
  const dialogRef = useRef<HTMLDialogElement>(null);
  const confirmRef = useRef<HTMLButtonElement>(null);
  // The latest handler, read by the native cancel event: the effect below runs once per opening, so that typing
  // in a field of the dialog (a new render each keystroke) never moves focus again.
  const onCancel = useRef(props.onCancel);
  onCancel.current = props.onCancel;

  useEffect(() => {
    const dialog = dialogRef.current;
    if (!dialog) return;
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    if (!dialog.open) dialog.showModal();
    const first = dialog.querySelector<HTMLElement>('[data-autofocus]') ?? confirmRef.current;
    first?.focus();
    const cancel = (e: Event) => {
      e.preventDefault(); // closing is the parent's decision (it unmounts the dialog)
      onCancel.current();
    };
    dialog.addEventListener('cancel', cancel);
    return () => {
      dialog.removeEventListener('cancel', cancel);
      if (dialog.open) dialog.close();
      if (opener?.isConnected) opener.focus();
    };
  }, []);

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
          disabled={props.busy}
          onClick={props.onConfirm}
          className={`rounded px-3 py-1.5 text-sm font-medium text-white disabled:opacity-50 ${props.danger ? 'bg-red-600 hover:bg-red-700' : 'bg-sky-600 hover:bg-sky-700'}`}
        >
          {props.busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
