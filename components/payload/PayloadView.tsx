'use client';
// A message body: JSON with syntax highlighting and folding (CodeMirror, loaded on demand), anything else as plain
// text; a Copy button either way. Until CodeMirror has loaded, the same text shows in a <pre> (React escapes it).
// Never rendered as HTML.
import { useEffect, useRef, useState } from 'react';
import { CopyButton } from './CopyButton.tsx';

/** The text shown for a stored payload: a string is shown as it is (a malformed body kept raw), JSON indented. */
export function payloadText(payload: unknown): { text: string; json: boolean } {
  if (typeof payload === 'string') return { text: payload, json: false };
  return { text: JSON.stringify(payload, null, 2), json: true };
}

export function PayloadView({ payload, label = 'Payload', testId = 'payload' }: { payload: unknown; label?: string; testId?: string }) {
  const { text, json } = payloadText(payload);
  const host = useRef<HTMLDivElement>(null);
  const [mounted, setMounted] = useState(false);

  useEffect(() => {
    let destroyed = false;
    let destroy: (() => void) | undefined;
    void import('./codemirror.ts').then((cm) => {
      if (destroyed || !host.current) return;
      const view = cm.createViewer(host.current, text, { label, json });
      destroy = () => view.destroy();
      setMounted(true);
    });
    return () => {
      destroyed = true;
      destroy?.();
      setMounted(false);
    };
  }, [text, json, label]);

  return (
    <div>
      <div className="mb-1 flex items-center gap-2 text-xs text-slate-500">
        <span data-testid={`${testId}-format`}>{json ? 'JSON' : 'Text (not JSON)'}</span>
        <span className="ml-auto">
          <CopyButton text={text} what={label} />
        </span>
      </div>
      <div data-testid={testId} data-format={json ? 'json' : 'text'} className="max-h-[28rem] overflow-auto rounded border border-slate-200">
        {mounted ? null : <pre className="whitespace-pre-wrap break-words bg-slate-50 p-2 font-mono text-xs text-slate-800">{text}</pre>}
        <div ref={host} />
      </div>
    </div>
  );
}
