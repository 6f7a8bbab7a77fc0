'use client';
// One rule for times everywhere: local time with its zone by default, UTC on request. The choice is the viewer's,
// kept in local storage and shared by every timestamp on the page (and other tabs) at once. The server renders
// UTC, since it cannot know the viewer's zone; the client switches after hydration without a mismatch.
import { useSyncExternalStore } from 'react';

export type TimeZoneMode = 'local' | 'utc';
const KEY = 'nimbus.timeZone';
const EVENT = 'nimbus:timezone';

function read(): TimeZoneMode {
  try {
    return window.localStorage.getItem(KEY) === 'utc' ? 'utc' : 'local';
  } catch {
    return 'local';
  }
}

function subscribe(onChange: () => void): () => void {
  window.addEventListener(EVENT, onChange);
  window.addEventListener('storage', onChange);
  return () => {
    window.removeEventListener(EVENT, onChange);
    window.removeEventListener('storage', onChange);
  };
}

export function useTimeZoneMode(): TimeZoneMode {
  return useSyncExternalStore(subscribe, read, () => 'utc');
}

export function setTimeZoneMode(mode: TimeZoneMode): void {
  try {
    window.localStorage.setItem(KEY, mode);
  } catch {
    // Storage refused (private mode): the switch still applies to this page.
  }
  window.dispatchEvent(new Event(EVENT));
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** `2026-12-03 10:26:40.123 UTC`: ISO-ordered, the zone always said. */
export function formatUtc(t: Date): string {
  return `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())} ${pad(t.getUTCHours())}:${pad(t.getUTCMinutes())}:${pad(t.getUTCSeconds())}.${pad(t.getUTCMilliseconds(), 3)} UTC`;
}

/** `2026-12-03 11:26:40.123 CET` in the browser's zone (the abbreviation, or GMT+1 where there is none). */
// One formatter for every timestamp: building an Intl.DateTimeFormat costs about a millisecond, and an event list
// shows fifty timestamps at once.
let zoneNames: Intl.DateTimeFormat | undefined;
export function formatLocal(t: Date): string {
  zoneNames ??= new Intl.DateTimeFormat(undefined, { timeZoneName: 'short' });
  const zone = zoneNames.formatToParts(t).find((p) => p.type === 'timeZoneName')?.value ?? '';
  return `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())} ${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}.${pad(t.getMilliseconds(), 3)} ${zone}`.trim();
}

/** The header's switch between local time and UTC. */
export function TimeZoneSwitch() {
  const mode = useTimeZoneMode();
  return (
    <button
      type="button"
      onClick={() => setTimeZoneMode(mode === 'utc' ? 'local' : 'utc')}
      aria-pressed={mode === 'utc'}
      title={mode === 'utc' ? 'Times are shown in UTC; switch to local time' : 'Times are shown in local time; switch to UTC'}
      className="rounded border border-slate-600 px-2 py-0.5 text-xs text-slate-300 hover:text-white"
    >
      {mode === 'utc' ? 'UTC' : 'Local time'}
    </button>
  );
}
