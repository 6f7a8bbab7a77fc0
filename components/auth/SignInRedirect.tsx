'use client';
// Sends a visitor who is not signed in to sign-in, remembering the page they asked for. Done in the browser
// because the root layout (the one place every page passes through) is not told the requested path; the page's
// content is never rendered for them either way.
import { useEffect } from 'react';

export function SignInRedirect() {
  useEffect(() => {
    const returnTo = `${window.location.pathname}${window.location.search}`;
    window.location.replace(`/auth/signin?returnTo=${encodeURIComponent(returnTo)}`);
  }, []);
  return (
    <div className="mx-auto mt-24 max-w-md text-center">
      <h1 className="text-lg font-semibold">Sign-in required</h1>
      <p className="mt-2 text-slate-600">Taking you to the sign-in page…</p>
      <p className="mt-4">
        <a href="/auth/signin" className="text-blue-700 underline">
          Sign in
        </a>
      </p>
    </div>
  );
}
