// Whether two parsed JSON values are the same document: the layout of the text is gone once parsed, and the order of
// an object's members carries no meaning in JSON (RFC 8259: an object is an unordered collection); an array's
// order does. Used by "Resubmit with changes" to tell an edit from the stored payload.
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => sameJson(v, b[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const keys = Object.keys(ao);
  if (keys.length !== Object.keys(bo).length) return false;
  return keys.every((k) => Object.hasOwn(bo, k) && sameJson(ao[k], bo[k]));
}
