// The console's keyboard shortcuts as pure rules: which key (or `g` then a key) means what, and when keys are the
// viewer's typing rather than a command. components/shortcuts/KeyboardShortcuts.tsx acts on them.

export type ShortcutAction = 'help' | 'search' | 'go-endpoints' | 'go-monitor' | 'next' | 'previous' | 'resubmit' | 'skip';

/** What the overlay lists, in order. */
export const SHORTCUTS: ReadonlyArray<{ keys: readonly string[]; action: ShortcutAction; label: string }> = [
  { keys: ['?'], action: 'help', label: 'Show or hide this list' },
  { keys: ['/'], action: 'search', label: 'Search by event id or session id' },
  { keys: ['g', 'e'], action: 'go-endpoints', label: 'Go to Endpoints' },
  { keys: ['g', 'm'], action: 'go-monitor', label: 'Go to Monitor' },
  { keys: ['j'], action: 'next', label: 'Next row in a list' },
  { keys: ['k'], action: 'previous', label: 'Previous row in a list' },
  { keys: ['r'], action: 'resubmit', label: 'Resubmit the event (asks first)' },
  { keys: ['s'], action: 'skip', label: 'Skip the event (asks first)' },
];

const SINGLE: Record<string, ShortcutAction> = { '?': 'help', '/': 'search', j: 'next', k: 'previous', r: 'resubmit', s: 'skip' };
const AFTER_G: Record<string, ShortcutAction> = { e: 'go-endpoints', m: 'go-monitor' };

export interface KeyStep {
  action: ShortcutAction | null;
  /** True when the key was `g` and the next key completes the sequence. */
  pendingG: boolean;
}

/** One key press, given whether a `g` came just before. An unknown key after `g` cancels the sequence. */
export function stepKey(key: string, pendingG: boolean): KeyStep {
  if (pendingG) return { action: AFTER_G[key] ?? null, pendingG: false };
  if (key === 'g') return { action: null, pendingG: true };
  return { action: SINGLE[key] ?? null, pendingG: false };
}

export interface KeyTarget {
  tagName: string;
  isContentEditable?: boolean;
  type?: string;
}

const NOT_TYPING_INPUTS = new Set(['checkbox', 'radio', 'button', 'submit', 'reset']);

/** Keys pressed in a text field, a select or an editor (CodeMirror is contenteditable) are the viewer's typing. */
export function isTyping(target: KeyTarget | null): boolean {
  if (target === null) return false;
  if (target.isContentEditable === true) return true;
  const tag = target.tagName.toUpperCase();
  if (tag === 'TEXTAREA' || tag === 'SELECT') return true;
  if (tag === 'INPUT') return !NOT_TYPING_INPUTS.has((target.type ?? 'text').toLowerCase());
  return false;
}
