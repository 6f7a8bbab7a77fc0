'use client';
// Global search: an event id or a session id. Goes to the search page, which jumps straight to the event when
// exactly one matches.
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';

export function GlobalSearch() {
  const router = useRouter();
  const [text, setText] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const q = text.trim();
    if (q) router.push(`/search?q=${encodeURIComponent(q)}`);
  };
  return (
    <form onSubmit={submit} role="search">
      <input
        aria-label="Search by event id or session id"
        value={text}
        onChange={(e) => setText(e.target.value)}
        placeholder="Event id or session id…"
        className="w-full rounded border md:w-72 border-slate-600 bg-slate-800 px-2 py-1 text-sm text-slate-100 placeholder:text-slate-400 focus:border-sky-400 focus:outline-none"
      />
    </form>
  );
}
