'use client';
// The frame every modal dialog of the console is drawn in: a native <dialog> opened with showModal() for as long as
// it is mounted (useModalDialog: focus trap, Escape asks onCancel, an inert page behind it, focus back to whatever
// opened it on close), labelled by its title. What goes inside (text, fields, errors, buttons) is the caller's, so
// each dialog keeps its own controls while the modal behaviour and the look stay one thing.
import { useId, useRef, type ReactNode } from 'react';
import { useModalDialog } from './useModalDialog.ts';

// Whole class names, so that Tailwind finds them in this file.
const WIDTH = { lg: 'max-w-lg', '5xl': 'max-w-5xl' } as const;

export function ModalShell(props: {
  title: string;
  onCancel: () => void;
  /** Focus to set once it opens when no element inside is marked data-autofocus (see useModalDialog). */
  initialFocus?: () => HTMLElement | null | undefined;
  width?: keyof typeof WIDTH;
  children: ReactNode;
}) {
  const dialogRef = useRef<HTMLDialogElement>(null);
  // A unique id: two dialogs on one page (or a dialog beside another's title) must not share a label.
  const titleId = useId();
  useModalDialog(dialogRef, props.onCancel, props.initialFocus);
  return (
    <dialog
      ref={dialogRef}
      aria-labelledby={titleId}
      className={`m-auto w-full ${WIDTH[props.width ?? 'lg']} rounded-lg bg-white p-5 text-slate-900 shadow-xl backdrop:bg-slate-900/40`}
    >
      <h2 id={titleId} className="mb-2 text-lg font-semibold">
        {props.title}
      </h2>
      {props.children}
    </dialog>
  );
}
