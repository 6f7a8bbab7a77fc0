'use client';
// "Compare payloads": two messages of the event's history chosen by the operator (the original request, each
// resubmission…), their bodies side by side with the changes marked. The diff chunk loads on first use.
import { useEffect, useRef, useState } from 'react';
import type { EventDetails } from '../api.ts';
import { payloadText } from './PayloadView.tsx';

type Entry = EventDetails['history'][number];

function entryLabel(h: Entry, i: number): string {
  return `#${i + 1} ${h.messageType} · ${h.enqueuedAt.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC')} · ${h.messageId}`;
}

export function HistoryDiff({ history }: { history: Entry[] }) {
  const withPayload = history.map((h, i) => ({ h, i })).filter(({ h }) => h.payload !== undefined);
  const [from, setFrom] = useState<string>(withPayload[0]?.h.messageId ?? '');
  const [to, setTo] = useState<string>(withPayload.at(-1)?.h.messageId ?? '');
  const [open, setOpen] = useState(false);
  const host = useRef<HTMLDivElement>(null);

  const a = withPayload.find((x) => x.h.messageId === from);
  const b = withPayload.find((x) => x.h.messageId === to);
  const aText = a ? payloadText(a.h.payload).text : '';
  const bText = b ? payloadText(b.h.payload).text : '';

  useEffect(() => {
    if (!open || !host.current) return;
    let destroyed = false;
    let destroy: (() => void) | undefined;
    void import('./diff.ts').then((m) => {
      if (destroyed || !host.current) return;
      const view = m.createDiff(host.current, { text: aText, label: 'Earlier payload' }, { text: bText, label: 'Later payload' });
      destroy = () => view.destroy();
    });
    return () => {
      destroyed = true;
      destroy?.();
    };
  }, [open, aText, bText]);

  if (withPayload.length < 2) return null;
  const options = withPayload.map(({ h, i }) => (
    <option key={h.messageId} value={h.messageId}>
      {entryLabel(h, i)}
    </option>
  ));
  return (
    <div className="mt-3 border-t border-slate-100 pt-2" data-testid="history-diff">
      <div className="flex flex-wrap items-center gap-2 text-xs text-slate-600">
        <label className="flex items-center gap-1">
          Compare
          <select aria-label="Compare payload of" value={from} onChange={(e) => setFrom(e.target.value)} className="max-w-[18rem] rounded border border-slate-300 px-1 py-0.5">
            {options}
          </select>
        </label>
        <label className="flex items-center gap-1">
          with
          <select aria-label="With payload of" value={to} onChange={(e) => setTo(e.target.value)} className="max-w-[18rem] rounded border border-slate-300 px-1 py-0.5">
            {options}
          </select>
        </label>
        <button
          type="button"
          aria-expanded={open}
          onClick={() => setOpen((o) => !o)}
          className="rounded border border-slate-300 px-2 py-0.5 text-xs text-slate-700 hover:bg-slate-50"
        >
          {open ? 'Hide diff' : 'Compare payloads'}
        </button>
        {open && aText === bText ? <span className="text-slate-500">The two payloads are identical.</span> : null}
      </div>
      {open ? <div ref={host} data-testid="history-diff-view" className="mt-2 max-h-[28rem] overflow-auto rounded border border-slate-200" /> : null}
    </div>
  );
}
