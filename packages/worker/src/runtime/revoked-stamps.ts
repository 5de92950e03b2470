/**
 * Stamps revoked with `revoke_by_stamped_headers` (Celery 5.3+'s `worker_state.revoked_stamps`): stamp header →
 * the values revoked under it. A task whose message carries a revoked value under one of its stamps is revoked, as if
 * revoked by id. Kept for the worker's life, as Celery keeps them (not shared with peers, not limited).
 */
export class RevokedStamps {
  readonly #byHeader = new Map<string, unknown[]>();

  get size(): number {
    return this.#byHeader.size;
  }

  /** Adds the values of each header (one value or a list), as Celery's `revoked_stamps[header] += maybe_list(...)`. */
  add(headers: Readonly<Record<string, unknown>>): void {
    for (const [header, values] of Object.entries(headers)) {
      this.#byHeader.set(header, [...(this.#byHeader.get(header) ?? []), ...maybeList(values)]);
    }
  }

  /**
   * The stamp that revokes a message with these `stamps`, or undefined: as Celery's `Request.revoked`, the first of
   * the message's stamped headers that has revoked values decides, and matches when (any of) its value(s) is one of them.
   */
  revoking(stamps: Readonly<Record<string, unknown>>): { header: string; value: unknown } | undefined {
    if (this.#byHeader.size === 0) return undefined;
    for (const header of Object.keys(stamps)) {
      const revoked = this.#byHeader.get(header);
      if (!revoked) continue;
      const [value] = stampValuesMatching(revoked, stamps, header);
      return value === undefined ? undefined : { header, value };
    }
    return undefined;
  }

  clear(): void {
    this.#byHeader.clear();
  }
}

/**
 * The `headers` argument of `revoke_by_stamped_headers`: a mapping, or (from the command line) a list of
 * `key=value` strings. Anything else names no header.
 */
export function stampedHeadersArgument(headers: unknown): Record<string, unknown> {
  if (Array.isArray(headers)) {
    const out: Record<string, unknown> = {};
    for (const entry of headers) {
      if (typeof entry !== 'string' || !entry.includes('=')) continue;
      const [key = '', value = ''] = entry.split('=');
      out[key] = value;
    }
    return out;
  }
  return headers !== null && typeof headers === 'object' ? { ...(headers as Record<string, unknown>) } : {};
}

/** The values a message is stamped with under `header` that are among `revoked` (one value or a list). */
export function stampValuesMatching(revoked: unknown, stamps: Readonly<Record<string, unknown>>, header: string): unknown[] {
  if (!Object.hasOwn(stamps, header)) return [];
  const candidates = maybeList(revoked);
  return maybeList(stamps[header]).filter((value) => candidates.some((one) => pythonEquals(one, value)));
}

function maybeList(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}

/** Python's `==` for JSON values: `4242 != '4242'`, lists and mappings by content. */
function pythonEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}
