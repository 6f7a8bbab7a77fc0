'use client';
// A modal confirmation that states exactly what will happen, in the console's modal frame (ModalShell: native
// <dialog>, focus trap, Escape, an inert page behind it). Focus goes in once when it opens (to a field marked
// data-autofocus, else the confirm button) and back to whatever opened it when it closes. `busy` means the
// confirmed action is under way ("Working…"); `disabled` means there is nothing to confirm (the label stays);
// `unavailable` says why the action can no longer be taken (the event moved on), and disables it too.
import { useRef, type ReactNode } from 'react';
import { ModalShell } from './ModalShell.tsx';
import { useFocusAwayWhenUnavailable } from './useFocusAwayWhenUnavailable.ts';

export function ConfirmDialog(props: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  /** The confirm button cannot be pressed, with its label unchanged (e.g. a preview with nothing to do). */
  disabled?: boolean;
  /**
   * Why the action can no longer be taken, said above the buttons; the confirm button is disabled, and what the
   * operator typed into the dialog stays as it is.
   */
  unavailable?: string | null;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const confirmRef = useRef<HTMLButtonElement>(null);
  const cancelRef = useRef<HTMLButtonElement>(null);
  const unavailable = Boolean(props.unavailable);
  useFocusAwayWhenUnavailable(unavailable, confirmRef, cancelRef);
  return (
    <ModalShell title={props.title} onCancel={props.onCancel} initialFocus={() => confirmRef.current}>
      <div className="mb-4 text-sm text-slate-700">{props.children}</div>
      {props.unavailable ? <CommandUnavailable reason={props.unavailable} /> : null}
      <div className="flex justify-end gap-2">
        <button ref={cancelRef} type="button" onClick={props.onCancel} className="rounded border border-slate-300 px-3 py-1.5 text-sm hover:bg-slate-50">
          Cancel
        </button>
        <button
          ref={confirmRef}
          type="button"
          disabled={props.busy || props.disabled || unavailable}
          onClick={props.onConfirm}
          className={`rounded px-3 py-1.5 text-sm font-medium text-white disabled:opacity-50 ${props.danger ? 'bg-red-600 hover:bg-red-700' : 'bg-sky-600 hover:bg-sky-700'}`}
        >
          {props.busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </ModalShell>
  );
}

/** Why a dialog's action can no longer be taken; a status, so a screen reader says it when it appears. */
export function CommandUnavailable({ reason }: { reason: string }) {
  return (
    <p role="status" data-testid="command-unavailable" className="mb-3 rounded border border-amber-200 bg-amber-50 px-3 py-2 text-sm text-amber-900">
      {reason}
    </p>
  );
}

/**
 * After a refusal because the event had changed since the dialog opened: what it now is, and that confirming again
 * acts on that (components/EventView.tsx). A status, so a screen reader says it when it appears.
 */
export function EventChanged({ text }: { text: string }) {
  return (
    <p role="status" data-testid="event-changed" className="mt-2 rounded border border-sky-200 bg-sky-50 px-3 py-2 text-sm text-sky-900">
      {text}
    </p>
  );
}
