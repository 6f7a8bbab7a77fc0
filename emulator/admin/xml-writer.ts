// A minimal XML writer for the admin plane's responses. Every text value and attribute value passes through
// escapeXml, and element content is a branded type, so a raw string can never be spliced into a document by
// accident (an entity name or SQL expression with '<' or '&' must not change the document's structure).

declare const xmlBrand: unique symbol;

/** A well-formed XML fragment produced by this module. */
export interface XmlFragment {
  readonly [xmlBrand]: true;
  readonly text: string;
}

function fragment(text: string): XmlFragment {
  return { text } as XmlFragment;
}

// XML 1.0 cannot carry most control characters or lone surrogates, even escaped; the client's parser would
// reject the whole document. They are replaced so one odd value cannot break a listing.
const INVALID_XML_CHARS =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point here
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

export function escapeXml(value: string): string {
  return value.replace(INVALID_XML_CHARS, '\uFFFD').replace(/[&<>"']/g, (c) => {
    switch (c) {
      case '&':
        return '&amp;';
      case '<':
        return '&lt;';
      case '>':
        return '&gt;';
      case '"':
        return '&quot;';
      default:
        return '&apos;';
    }
  });
}

const NAME = /^[A-Za-z_][A-Za-z0-9_.:-]*$/;

function checkName(name: string): string {
  // Element and attribute names come from this code base, never from requests; a bad one is a programming error.
  if (!NAME.test(name)) throw new Error(`invalid XML name: ${name}`);
  return name;
}

export type XmlAttributes = Record<string, string | undefined>;

function renderAttributes(attrs: XmlAttributes | undefined): string {
  if (!attrs) return '';
  let out = '';
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined) continue;
    out += ` ${checkName(name)}="${escapeXml(value)}"`;
  }
  return out;
}

/** An element with child elements (children that are undefined are skipped, which keeps optional fields terse). */
export function element(
  name: string,
  attrs: XmlAttributes | undefined,
  children: Array<XmlFragment | undefined>,
): XmlFragment {
  const inner = children
    .filter((c): c is XmlFragment => c !== undefined)
    .map((c) => c.text)
    .join('');
  const open = `${checkName(name)}${renderAttributes(attrs)}`;
  return fragment(inner === '' ? `<${open}/>` : `<${open}>${inner}</${name}>`);
}

/** An element holding one text value (escaped). */
export function textElement(
  name: string,
  value: string | number | boolean,
  attrs?: XmlAttributes,
): XmlFragment {
  const open = `${checkName(name)}${renderAttributes(attrs)}`;
  return fragment(`<${open}>${escapeXml(String(value))}</${name}>`);
}

/** A text element, or nothing when the value is absent. */
export function optionalText(
  name: string,
  value: string | number | boolean | undefined,
): XmlFragment | undefined {
  return value === undefined ? undefined : textElement(name, value);
}

/** A complete document. No whitespace between elements: the SDK's parser keeps text nodes under the same key it uses for metadata. */
export function xmlDocument(root: XmlFragment): string {
  return `<?xml version="1.0" encoding="utf-8"?>${root.text}`;
}
