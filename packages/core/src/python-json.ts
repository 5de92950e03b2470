import { brandClass } from './class-brand';

/**
 * JSON the way Python's `json.dumps` writes it with default arguments, which is what Kombu stores in Redis:
 * `", "` and `": "` separators and `ensure_ascii` (every character outside printable ASCII as `\uXXXX`,
 * lowercase hex, astral characters as surrogate pairs). Writing the same bytes as Kombu keeps `MONITOR` traces,
 * golden tests and byte-level tooling identical between Python and kq.
 */

// Everything `ensure_ascii` escapes beyond what JSON.stringify already escapes (DEL and all non-ASCII).
const NON_ASCII = /[\u007f-\uffff]/;
const NON_ASCII_ALL = /[\u007f-\uffff]/g;

function escapeUnit(char: string): string {
  return '\\u' + char.charCodeAt(0).toString(16).padStart(4, '0');
}

/** A JSON string literal as Python writes it. */
export function pyString(value: string): string {
  // Most strings in a message (names, ids, keys) need no escape at all: skip JSON.stringify and the regex for them.
  if (value.length <= 256 && isPlainAscii(value)) return `"${value}"`;
  const json = JSON.stringify(value);
  return NON_ASCII.test(json) ? json.replace(NON_ASCII_ALL, escapeUnit) : json;
}

/** Printable ASCII without `"` or `\`: written as it is by both JSON.stringify and Python. */
function isPlainAscii(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return false;
  }
  return true;
}

/**
 * Python-style JSON of a JSON-compatible value. `undefined` members are left out and non-finite numbers become
 * `null`, as JSON.stringify does; objects with `toJSON` (Date) are serialized through it; BigInt (which Python has)
 * is written as its digits. Written directly rather than by re-spacing JSON.stringify's output: for the small
 * objects of a message envelope that is over twice as fast.
 */
export function pyJson(value: unknown): string {
  return encode(value, 0) ?? 'null';
}

const MAX_DEPTH = 1000;

function encode(value: unknown, depth: number): string | undefined {
  switch (typeof value) {
    case 'string':
      return pyString(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    case 'bigint':
      return value.toString();
    case 'object':
      break;
  }
  if (value === null) return 'null';
  if (depth > MAX_DEPTH) throw new TypeError('Cannot serialize a value nested deeper than 1000 levels (a cycle?) as JSON.');
  const withToJson = value as { toJSON?: () => unknown };
  if (typeof withToJson.toJSON === 'function') return encode(withToJson.toJSON(), depth + 1);
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return encode(value.valueOf(), depth + 1);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ', ') + (encode(value[i], depth + 1) ?? 'null');
    return `${out}]`;
  }
  let out = '{';
  let separator = '';
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const item = encode((value as Record<string, unknown>)[key], depth + 1);
    if (item === undefined) continue;
    out += separator + memberStart(key) + item;
    separator = ', ';
  }
  return out + '}';
}

/** `"key": ` for object keys: message headers repeat the same few dozen keys, so their literals are kept. */
const memberStarts = new Map<string, string>();
const MAX_MEMBER_STARTS = 4096;

function memberStart(key: string): string {
  let start = memberStarts.get(key);
  if (start === undefined) {
    start = pyString(key) + ': ';
    if (memberStarts.size < MAX_MEMBER_STARTS && key.length <= 64) memberStarts.set(key, start);
  }
  return start;
}

// ——— lossless documents ———

/**
 * A parsed JSON document that remembers what a plain `JSON.parse` forgets: the literal text of every number
 * (`2.0` stays `2.0`, integers beyond 2**53 stay exact) and Python's `NaN`/`Infinity` literals. Used where kq
 * rewrites a message someone else wrote (restore sets `redelivered`), so nothing but that flag changes.
 */
export type JsonNode =
  | { readonly kind: 'object'; readonly entries: Array<[string, JsonNode]> }
  | { readonly kind: 'array'; readonly items: JsonNode[] }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'literal'; readonly text: string };

export class JsonSyntaxError extends Error {}

/** Parses JSON (plus Python's `NaN`, `Infinity`, `-Infinity`) into a {@link JsonNode}. */
export function parseDocument(text: string): JsonNode {
  const parser = new DocumentParser(text);
  const node = parser.value(0);
  parser.end();
  return node;
}
brandClass(JsonSyntaxError, '@kq/core:JsonSyntaxError');

/** Writes a {@link JsonNode} as Python's `json.dumps` would (number literals verbatim). */
export function writeDocument(node: JsonNode): string {
  switch (node.kind) {
    case 'string':
      return pyString(node.value);
    case 'literal':
      return node.text;
    case 'array':
      return `[${node.items.map(writeDocument).join(', ')}]`;
    case 'object':
      return `{${node.entries.map(([key, value]) => `${pyString(key)}: ${writeDocument(value)}`).join(', ')}}`;
  }
}

/** Converts a {@link JsonNode} to plain JavaScript values (`NaN`/`Infinity` literals become those numbers). */
export function documentValue(node: JsonNode): unknown {
  switch (node.kind) {
    case 'string':
      return node.value;
    case 'literal':
      switch (node.text) {
        case 'true':
          return true;
        case 'false':
          return false;
        case 'null':
          return null;
        default:
          return Number(node.text);
      }
    case 'array':
      return node.items.map(documentValue);
    case 'object': {
      const result: Record<string, unknown> = {};
      for (const [key, value] of node.entries) result[key] = documentValue(value);
      return result;
    }
  }
}

/** The member `key` of an object node (the last one, as Python's dict keeps the last duplicate). */
export function member(node: JsonNode | undefined, key: string): JsonNode | undefined {
  if (node?.kind !== 'object') return undefined;
  let found: JsonNode | undefined;
  for (const [name, value] of node.entries) if (name === key) found = value;
  return found;
}

/** Sets `key` on an object node in place: replaces the value where it is, or appends it (Python dict order). */
export function setMember(node: JsonNode, key: string, value: JsonNode): void {
  if (node.kind !== 'object') return;
  let replaced = false;
  for (const entry of node.entries) {
    if (entry[0] === key) {
      entry[1] = value;
      replaced = true;
    }
  }
  if (!replaced) node.entries.push([key, value]);
}

export const TRUE_NODE: JsonNode = { kind: 'literal', text: 'true' };

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;

class DocumentParser {
  readonly #text: string;
  #at = 0;

  constructor(text: string) {
    this.#text = text;
  }

  value(depth: number): JsonNode {
    if (depth > MAX_DEPTH) this.#fail('nesting deeper than 1000 levels');
    this.#skip();
    const char = this.#text[this.#at];
    switch (char) {
      case '{':
        return this.#object(depth);
      case '[':
        return this.#array(depth);
      case '"':
        return { kind: 'string', value: this.#string() };
      case 't':
        return this.#word('true');
      case 'f':
        return this.#word('false');
      case 'n':
        return this.#word('null');
      case 'N':
        return this.#word('NaN');
      case 'I':
        return this.#word('Infinity');
      case undefined:
        return this.#fail('unexpected end of input');
      default:
        if (char === '-' && this.#text.startsWith('-Infinity', this.#at)) return this.#word('-Infinity');
        return this.#number();
    }
  }

  end(): void {
    this.#skip();
    if (this.#at !== this.#text.length) this.#fail('unexpected text after the JSON value');
  }

  #object(depth: number): JsonNode {
    this.#at++;
    const entries: Array<[string, JsonNode]> = [];
    this.#skip();
    if (this.#text[this.#at] === '}') {
      this.#at++;
      return { kind: 'object', entries };
    }
    for (;;) {
      this.#skip();
      if (this.#text[this.#at] !== '"') this.#fail('expected a string key');
      const key = this.#string();
      this.#skip();
      if (this.#text[this.#at] !== ':') this.#fail("expected ':'");
      this.#at++;
      entries.push([key, this.value(depth + 1)]);
      this.#skip();
      const next = this.#text[this.#at++];
      if (next === '}') return { kind: 'object', entries };
      if (next !== ',') this.#fail("expected ',' or '}'");
    }
  }

  #array(depth: number): JsonNode {
    this.#at++;
    const items: JsonNode[] = [];
    this.#skip();
    if (this.#text[this.#at] === ']') {
      this.#at++;
      return { kind: 'array', items };
    }
    for (;;) {
      items.push(this.value(depth + 1));
      this.#skip();
      const next = this.#text[this.#at++];
      if (next === ']') return { kind: 'array', items };
      if (next !== ',') this.#fail("expected ',' or ']'");
    }
  }

  #string(): string {
    // Find the closing quote, then let JSON.parse decode the escapes (fast and exact).
    const start = this.#at;
    let at = start + 1;
    for (;;) {
      const quote = this.#text.indexOf('"', at);
      if (quote === -1) this.#fail('unterminated string');
      let backslashes = 0;
      for (let i = quote - 1; i > start && this.#text[i] === '\\'; i--) backslashes++;
      if (backslashes % 2 === 0) {
        this.#at = quote + 1;
        try {
          return JSON.parse(this.#text.slice(start, quote + 1)) as string;
        } catch {
          return this.#fail('invalid string');
        }
      }
      at = quote + 1;
    }
  }

  #number(): JsonNode {
    NUMBER.lastIndex = this.#at;
    const match = NUMBER.exec(this.#text);
    if (!match) return this.#fail('unexpected character');
    this.#at += match[0].length;
    return { kind: 'literal', text: match[0] };
  }

  #word(word: string): JsonNode {
    if (!this.#text.startsWith(word, this.#at)) this.#fail('unexpected word');
    this.#at += word.length;
    return { kind: 'literal', text: word };
  }

  #skip(): void {
    WHITESPACE.lastIndex = this.#at;
    WHITESPACE.exec(this.#text);
    this.#at = WHITESPACE.lastIndex;
  }

  #fail(why: string): never {
    throw new JsonSyntaxError(`Invalid JSON at offset ${this.#at}: ${why}`);
  }
}
