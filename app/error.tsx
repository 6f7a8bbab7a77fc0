'use client';
// A page that failed to render (its server component threw, e.g. the store could not be opened): the header
// stays, the reason is said without internals, and the operator can try again without a full reload.
import { useEffect } from 'react';

export default function PageError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  useEffect(() => {
    // The browser console gets the digest, which matches the server's log line for this failure.
    console.error('page failed', error.digest ?? error.message);
  }, [error]);
  return (
    <section role="alert" className="rounded border border-red-300 bg-red-50 p-4 text-sm text-red-900">
      <h1 className="mb-1 text-lg font-semibold">This page could not be shown</h1>
      <p className="mb-3">
        The console could not load it{error.digest ? ` (reference ${error.digest})` : ''}. The store or Service Bus may be
        unreachable; the server log has the details.
      </p>
      <button type="button" onClick={reset} className="rounded border border-red-300 bg-white px-3 py-1 hover:bg-red-100">
        Try again
      </button>
    </section>
  );
}
