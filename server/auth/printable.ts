// Which characters a name shown to people may not carry: control characters (NUL included) and the bidirectional
// marks, overrides and isolates. In a grant's subject or name (grants.ts refuses them there), or in a principal's
// display name taken from a token (bearer.ts, flow.ts: replaced as the name enters), they make the Access page, the
// audit log and an event's trail show one identity while the text is another ("\u202Etset@rotarepo" reads as
// "operator@test"). No imports: the sign-in modules use it, and must not pull the store in.

// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, 'g');

/** A display name with every UNPRINTABLE character replaced by U+FFFD, so what is shown is what is there. */
export const printableName = (name: string): string => name.replace(UNPRINTABLE_ALL, '\uFFFD');
