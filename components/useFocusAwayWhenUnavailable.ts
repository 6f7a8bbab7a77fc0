'use client';
// A dialog whose confirm button is disabled while it is open (its command is no longer available): a disabled
// button cannot hold focus, so the browser drops it to the page's body, and a keyboard user is left nowhere. Focus
// moves to `to` (Cancel, the one thing left to do) - only when it was on that button or already lost, never away
// from a field the operator is typing in.
import { useEffect, type RefObject } from 'react';

export function useFocusAwayWhenUnavailable(unavailable: boolean, from: RefObject<HTMLElement | null>, to: RefObject<HTMLElement | null>): void {
  useEffect(() => {
    if (!unavailable) return;
    const active = document.activeElement;
    if (active === null || active === document.body || active === from.current) to.current?.focus();
  }, [unavailable, from, to]);
}
