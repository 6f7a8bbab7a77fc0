'use client';
// Copies a text to the clipboard and says so (the button's label and a polite live region), or says it could not.
import { useEffect, useState } from 'react';

export function CopyButton({ text, what }: { text: string; what: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (state === 'idle') return;
    const t = setTimeout(() => setState('idle'), 2500);
    return () => clearTimeout(t);
  }, [state]);
  return (
    <>
      <button
        type="button"
        data-copy-state={state}
        onClick={() => {
          // The Clipboard API needs a secure context (https or localhost); elsewhere it is absent: said, not thrown.
          const clipboard = typeof navigator !== 'undefined' ? navigator.clipboard : undefined;
          if (!clipboard) return setState('failed');
          clipboard.writeText(text).then(
            () => setState('copied'),
            () => setState('failed'),
          );
        }}
        className="rounded border border-slate-300 px-2 py-0.5 text-xs text-slate-700 hover:bg-slate-50"
      >
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed' : `Copy`}
      </button>
      <span role="status" className="sr-only">
        {state === 'copied' ? `${what} copied to the clipboard` : state === 'failed' ? `${what} could not be copied` : ''}
      </span>
    </>
  );
}
