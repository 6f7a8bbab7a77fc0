'use client';
// Reloads the page when the session runs out. Client-side navigation does not render the root layout again, so
// without this an expired session would only show as failing API calls; the reload goes through the layout,
// which sends the user to sign-in and back to this page.
import { useEffect } from 'react';

/** setTimeout's largest delay (about 24.8 days); a longer session is reloaded by the user long before. */
const MAX_DELAY_MS = 2_147_483_647;

export function SessionExpiry({ expiresAt }: { expiresAt: number }) {
  useEffect(() => {
    const delay = expiresAt * 1000 - Date.now() + 1000;
    if (delay > MAX_DELAY_MS) return;
    const timer = setTimeout(() => window.location.reload(), Math.max(0, delay));
    return () => clearTimeout(timer);
  }, [expiresAt]);
  return null;
}
