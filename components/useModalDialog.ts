'use client';
// The native <dialog> opened with showModal() as a React component's lifetime: it opens when the component mounts
// (focus trap, Escape, an inert page behind it) and closes when it unmounts, giving focus back to whatever opened it.
// Escape asks the parent through onCancel instead of closing by itself: the parent decides (it unmounts the dialog).
import { useEffect, useRef, type RefObject } from 'react';

export function useModalDialog(
  dialogRef: RefObject<HTMLDialogElement | null>,
  onCancel: () => void,
  /** Focus to set once it opens: by default the first element marked data-autofocus, else nothing. */
  initialFocus?: () => HTMLElement | null | undefined,
): void {
  // The latest handlers, read by the native cancel event: the effect runs once per opening, so that typing in a
  // field of the dialog (a new render each keystroke) never moves focus again.
  const cancelRef = useRef(onCancel);
  cancelRef.current = onCancel;
  const focusRef = useRef(initialFocus);
  focusRef.current = initialFocus;

  useEffect(() => {
    const dialog = dialogRef.current;
    if (!dialog) return;
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    if (!dialog.open) dialog.showModal();
    (dialog.querySelector<HTMLElement>('[data-autofocus]') ?? focusRef.current?.())?.focus();
    const cancel = (e: Event) => {
      e.preventDefault();
      cancelRef.current();
    };
    dialog.addEventListener('cancel', cancel);
    return () => {
      dialog.removeEventListener('cancel', cancel);
      if (dialog.open) dialog.close();
      if (opener?.isConnected) opener.focus();
    };
  }, [dialogRef]);
}
