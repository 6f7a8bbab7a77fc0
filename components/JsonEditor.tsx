'use client';
// A plain-text JSON editor that refuses invalid JSON: the parsed value is reported only while the text parses
// (and is not null), so a caller can never send a payload the operator did not see as valid.
import { useState } from 'react';

export type JsonState = { ok: true; value: unknown } | { ok: false; problem: string };

export function parseJsonText(text: string): JsonState {
  if (text.trim() === '') return { ok: false, problem: 'The payload is empty.' };
  try {
    const value: unknown = JSON.parse(text);
    if (value === null) return { ok: false, problem: 'The payload must not be null.' };
    return { ok: true, value };
  } catch (err) {
    return { ok: false, problem: `Invalid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}

export function JsonEditor({ initial, onChange }: { initial: string; onChange: (state: JsonState) => void }) {
  const [text, setText] = useState(initial);
  const [state, setState] = useState<JsonState>(() => parseJsonText(initial));
  return (
    <div>
      <textarea
        aria-label="Edited payload (JSON)"
        spellCheck={false}
        value={text}
        onChange={(e) => {
          setText(e.target.value);
          const s = parseJsonText(e.target.value);
          setState(s);
          onChange(s);
        }}
        rows={16}
        className={`w-full rounded border p-2 font-mono text-xs ${state.ok ? 'border-slate-300' : 'border-red-400 bg-red-50'}`}
      />
      <p role="status" className={`text-xs ${state.ok ? 'text-emerald-700' : 'text-red-700'}`}>
        {state.ok ? 'Valid JSON' : state.problem}
      </p>
    </div>
  );
}
