/** A value read back from a Python repr: what JSON can carry. */
export type PythonLiteral = null | boolean | number | string | PythonLiteral[] | { [key: string]: PythonLiteral };

/**
 * Reads a Python repr of plain data (`None`, `True`, numbers, `'text'`, lists, tuples as arrays, dicts with string
 * keys) back into values — Python's `ast.literal_eval` for what events carry as `args`/`kwargs`. Anything else
 * (a truncated `...`, bytes, sets, objects' reprs) is undefined. Tuples and lists both come back as arrays: the
 * caller checks the values re-render to the same text before trusting them.
 */
export function parsePythonLiteral(text: string): PythonLiteral | undefined {
  const reader = new Reader(text);
  try {
    const value = reader.value();
    reader.space();
    return reader.done() ? value : undefined;
  } catch (error) {
    if (error instanceof NotALiteral || error instanceof RangeError) return undefined; // RangeError: a \U past U+10FFFF
    throw error;
  }
}

class NotALiteral extends Error {}

const ESCAPES: Readonly<Record<string, string>> = { n: '\n', r: '\r', t: '\t', '\\': '\\', "'": "'", '"': '"', '0': '\0', a: '\x07', b: '\b', f: '\f', v: '\v' };

class Reader {
  #at = 0;
  constructor(readonly text: string) {}

  done(): boolean {
    return this.#at === this.text.length;
  }

  space(): void {
    while (this.#at < this.text.length && /\s/.test(this.text[this.#at] ?? '')) this.#at++;
  }

  value(): PythonLiteral {
    this.space();
    const char = this.text[this.#at];
    if (char === '(' || char === '[') return this.#sequence(char === '(' ? ')' : ']');
    if (char === '{') return this.#dict();
    if (char === "'" || char === '"') return this.#string();
    for (const [word, value] of [['None', null], ['True', true], ['False', false]] as const) {
      if (this.text.startsWith(word, this.#at)) {
        this.#at += word.length;
        return value;
      }
    }
    const number = /^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/.exec(this.text.slice(this.#at));
    if (!number) throw new NotALiteral();
    this.#at += number[0].length;
    return Number(number[0]);
  }

  #sequence(close: string): PythonLiteral[] {
    this.#at++;
    const items: PythonLiteral[] = [];
    for (;;) {
      this.space();
      if (this.text[this.#at] === close) {
        this.#at++;
        return items;
      }
      items.push(this.value());
      this.space();
      if (this.text[this.#at] === ',') this.#at++;
      else if (this.text[this.#at] !== close) throw new NotALiteral();
    }
  }

  #dict(): { [key: string]: PythonLiteral } {
    this.#at++;
    const out: { [key: string]: PythonLiteral } = {};
    for (;;) {
      this.space();
      if (this.text[this.#at] === '}') {
        this.#at++;
        return out;
      }
      this.space();
      if (this.text[this.#at] !== "'" && this.text[this.#at] !== '"') throw new NotALiteral(); // kwargs keys are names
      const key = this.#string();
      this.space();
      if (this.text[this.#at++] !== ':') throw new NotALiteral();
      Object.defineProperty(out, key, { value: this.value(), enumerable: true, writable: true, configurable: true });
      this.space();
      if (this.text[this.#at] === ',') this.#at++;
      else if (this.text[this.#at] !== '}') throw new NotALiteral();
    }
  }

  #string(): string {
    const quote = this.text[this.#at++];
    let out = '';
    for (;;) {
      const char = this.text[this.#at++];
      if (char === undefined) throw new NotALiteral();
      if (char === quote) return out;
      if (char !== '\\') {
        out += char;
        continue;
      }
      const escape = this.text[this.#at++] ?? '';
      const hex = escape === 'x' ? 2 : escape === 'u' ? 4 : escape === 'U' ? 8 : 0;
      if (hex) {
        const digits = this.text.slice(this.#at, this.#at + hex);
        if (!/^[0-9a-fA-F]+$/.test(digits) || digits.length !== hex) throw new NotALiteral();
        out += String.fromCodePoint(parseInt(digits, 16));
        this.#at += hex;
      } else if (escape in ESCAPES) {
        out += ESCAPES[escape];
      } else {
        throw new NotALiteral();
      }
    }
  }
}
