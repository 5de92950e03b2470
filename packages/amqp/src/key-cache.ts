/** Keys longer than this are decoded every time: header names are short, and the cache's memory stays small. */
const MAX_CACHED_LENGTH = 64;
/** Slots of the cache by default: far more than the distinct header names one application sends. */
const DEFAULT_SLOT_COUNT = 512;

/**
 * Field-table keys, decoded once and handed out again whenever the same bytes come back.
 *
 * Every delivery repeats the same header names (a Celery task message has some twenty). Decoding each one anew
 * costs a native call and a string, and storing a property under a fresh string makes V8 look it up in its string
 * table first. Here the bytes are hashed and compared with the cached key in the slot; on a hit the key itself
 * comes back, already internalized (the form V8 stores property names in), so building the table is plain
 * property stores. A slot holds the last key that hashed to it; keys with non-ASCII bytes (whose UTF-8 decoding
 * is not byte for byte) or longer than `MAX_CACHED_LENGTH` bypass the cache.
 */
export class KeyCache {
  readonly #slots: Array<string | undefined>;
  readonly #mask: number;
  readonly #decode: (buffer: Buffer, start: number, end: number) => string;

  /** `slotCount` is rounded up to a power of two. */
  constructor(decode: (buffer: Buffer, start: number, end: number) => string, slotCount = DEFAULT_SLOT_COUNT) {
    const size = 2 ** Math.ceil(Math.log2(Math.max(1, slotCount)));
    this.#slots = new Array<string | undefined>(size).fill(undefined);
    this.#mask = size - 1;
    this.#decode = decode;
  }

  /** The key whose UTF-8 bytes are `buffer[start, start + length)`. */
  get(buffer: Buffer, start: number, length: number): string {
    const end = start + length;
    if (length > MAX_CACHED_LENGTH) return this.#decode(buffer, start, end);
    let hash = length;
    for (let at = start; at < end; at++) {
      const byte = buffer[at] as number;
      if (byte >= 0x80) return this.#decode(buffer, start, end);
      hash = (Math.imul(hash, 31) + byte) | 0;
    }
    const slot = hash & this.#mask;
    const cached = this.#slots[slot];
    if (cached !== undefined && sameAscii(cached, buffer, start, length)) return cached;
    const key = internalized(this.#decode(buffer, start, end));
    this.#slots[slot] = key;
    return key;
  }
}

function sameAscii(text: string, buffer: Buffer, start: number, length: number): boolean {
  if (text.length !== length) return false;
  for (let index = 0; index < length; index++) if (text.charCodeAt(index) !== buffer[start + index]) return false;
  return true;
}

/** The copy of `text` that V8 keeps as a property name (other engines: an equal string). */
function internalized(text: string): string {
  return Object.keys({ [text]: true })[0] ?? text;
}
