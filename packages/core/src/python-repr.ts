/**
 * Python's `repr()` of JSON-like values, for the strings Celery peers display and parse by eye: `argsrepr`
 * (`"(2, 2)"`), remote-control error replies (`"KeyError('no_such_cmd')"`), event fields. Python tools show
 * these verbatim, so they must look like Python wrote them.
 */
export function pythonRepr(value: unknown, maxLength = Infinity): string {
  const text = repr(value, new Set());
  return text.length > maxLength ? `${text.slice(0, Math.max(0, maxLength - 3))}...` : text;
}

/** `repr(tuple(values))`: `(1,)` for one element, as Python writes it. */
export function pythonTupleRepr(values: readonly unknown[], maxLength = Infinity): string {
  const seen = new Set<unknown>();
  const inner = values.map((value) => repr(value, seen));
  const text = inner.length === 1 ? `(${inner[0]},)` : `(${inner.join(', ')})`;
  return text.length > maxLength ? `${text.slice(0, Math.max(0, maxLength - 3))}...` : text;
}

/** `repr(set(values))`: `{'a', 'b'}`, and `set()` for none (Python has no `{}` set literal). */
export function pythonSetRepr(values: Iterable<unknown>): string {
  const seen = new Set<unknown>();
  const inner = [...new Set(values)].map((value) => repr(value, seen));
  return inner.length === 0 ? 'set()' : `{${inner.join(', ')}}`;
}

/** `repr(exception)` as Python prints it: `ValueError('kaboom')`. */
export function pythonExceptionRepr(name: string, message: string): string {
  return `${name}(${pythonStringRepr(message)})`;
}

/** Python's quoting rule: single quotes unless the text has a single quote and no double quote. */
export function pythonStringRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (char === '\\') out += '\\\\';
    else if (char === quote) out += `\\${quote}`;
    else if (char === '\n') out += '\\n';
    else if (char === '\r') out += '\\r';
    else if (char === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += char;
  }
  return out + quote;
}

function repr(value: unknown, seen: Set<unknown>): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'nan';
    if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
    return String(value);
  }
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string') return pythonStringRepr(value);
  if (value instanceof Date) return `datetime.datetime.fromisoformat(${pythonStringRepr(value.toISOString())})`;
  if (Buffer.isBuffer(value)) return `b${pythonStringRepr(value.toString('latin1'))}`;
  if (typeof value !== 'object') return pythonStringRepr(String(value));
  if (seen.has(value)) return Array.isArray(value) ? '[...]' : '{...}';
  seen.add(value);
  try {
    if (Array.isArray(value)) return `[${value.map((item) => repr(item, seen)).join(', ')}]`;
    const entries = Object.entries(value as Record<string, unknown>).map(([key, item]) => `${pythonStringRepr(key)}: ${repr(item, seen)}`);
    return `{${entries.join(', ')}}`;
  } finally {
    seen.delete(value);
  }
}
