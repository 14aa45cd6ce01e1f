// XML in and out for the management plane. In: fast-xml-parser behind three guards, because request bodies
// are hostile until proven otherwise: a size bound (checked by the body reader), a refusal of any DOCTYPE (so
// no entity of the sender's can be declared or expanded: XXE, "billion laughs"; the real service's
// DataContractSerializer refuses DTDs too), well-formedness checked before parsing (the parser alone is
// lenient), and a nesting bound. Namespace prefixes are dropped, so `ns0:entry` (Python) and `entry` (JS) read
// alike, and elements are looked up by local name in any order. Out: a tiny element writer that escapes every
// text and attribute value.

import { XMLParser, XMLValidator } from 'fast-xml-parser';

/** Deepest element nesting a request may have (a rule with a correlation filter's properties needs about 8). */
export const MAX_XML_DEPTH = 32;

/** A request body that is not acceptable XML; the text names why, for a 400 reply. */
export class XmlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'XmlError';
  }
}

/** A parsed element: child elements by local name, attributes as `@_name`, text as `#text` or a plain string. */
export type XmlValue = string | XmlObject | XmlValue[];
/** An element with children or attributes. */
export interface XmlObject {
  [key: string]: XmlValue;
}

const parser = new XMLParser({
  ignoreAttributes: false,
  removeNSPrefix: true,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  // Only the five predefined entities can occur: a DOCTYPE is refused before the parser runs.
  processEntities: true,
  htmlEntities: false,
  maxNestedTags: MAX_XML_DEPTH,
});

/** Parses a request body; throws XmlError for a DOCTYPE, malformed XML or nesting deeper than MAX_XML_DEPTH. */
export function parseXml(text: string): XmlObject {
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw new XmlError('Document type declarations are not allowed.');
  const valid = XMLValidator.validate(text);
  if (valid !== true) throw new XmlError(`The request body is not well-formed XML: ${valid.err.msg} (line ${valid.err.line}).`);
  try {
    return parser.parse(text) as XmlObject;
  } catch (err) {
    throw new XmlError(`The request body could not be read: ${(err as Error).message}.`);
  }
}

/** The child element `name` of `node` (the first one if repeated), or undefined. */
export function child(node: XmlValue | undefined, name: string): XmlValue | undefined {
  if (node === undefined || typeof node === 'string' || Array.isArray(node)) return undefined;
  const v = node[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The text of an element (`<a>x</a>` or `<a i:type="...">x</a>`); undefined when absent or not text. */
export function textOf(node: XmlValue | undefined): string | undefined {
  if (typeof node === 'string') return node;
  if (node && !Array.isArray(node)) {
    const t = node['#text'];
    if (typeof t === 'string') return t;
    // An element with only attributes (`<a i:nil="true"/>`) has no text.
    return Object.keys(node).every((k) => k.startsWith('@_')) ? '' : undefined;
  }
  return undefined;
}

/** An element to write: a name, attributes and children (elements or text). */
export interface XmlElement {
  name: string;
  attrs?: Record<string, string>;
  children?: (XmlElement | string)[];
}

/** Builds an element; `undefined`/`null` children are left out, so optional elements can be written inline. */
export function el(name: string, attrs?: Record<string, string> | null, ...children: (XmlElement | string | null | undefined)[]): XmlElement {
  return { name, attrs: attrs ?? undefined, children: children.filter((c): c is XmlElement | string => c !== null && c !== undefined) };
}

/** Escapes text for an element body or a double-quoted attribute. */
export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** Serialises an element (no XML declaration). */
export function renderXml(e: XmlElement): string {
  let out = `<${e.name}`;
  for (const [k, v] of Object.entries(e.attrs ?? {})) out += ` ${k}="${escapeXml(v)}"`;
  const kids = e.children ?? [];
  if (kids.length === 0) return out + '/>';
  out += '>';
  for (const c of kids) out += typeof c === 'string' ? escapeXml(c) : renderXml(c);
  return out + `</${e.name}>`;
}

/** A document: the XML declaration the service sends, then the element. */
export function xmlDocument(e: XmlElement): string {
  return '<?xml version="1.0" encoding="utf-8"?>' + renderXml(e);
}
