/**
 * Celery's `memsample` / `memdump` remote-control commands (`celery.utils.debug`): RSS samples taken on request,
 * reported in Celery's humanized form (`61.25MB`) and dumped (then cleared) as Celery prints them.
 */
export class MemorySamples {
  readonly #samples: string[] = [];

  /** Takes a sample of the resident set size (Celery's `sample_mem`). */
  sample(): string {
    const rss = humanBytes(process.memoryUsage.rss());
    this.#samples.push(rss);
    return rss;
  }

  /** Celery's `memdump`: up to `samples` of the samples taken, then the RSS after a collection; clears the samples. */
  dump(samples = 10): string {
    const taken = this.#samples.length <= samples ? [...this.#samples] : spread(this.#samples, samples);
    this.#samples.length = 0;
    // Node collects only when exposed (--expose-gc); otherwise the current RSS is reported, as Celery does without gc.
    (globalThis as { gc?: () => void }).gc?.();
    const lines = taken.length > 0 ? ['- rss (sample):', ...taken.map((rss) => `-    > ${rss},`)] : [];
    lines.push(`- rss (end): ${humanBytes(process.memoryUsage.rss())}.`);
    return `${lines.join('\n')}\n`;
  }
}

const UNITS: ReadonlyArray<readonly [number, string]> = [
  [2 ** 40, 'TB'],
  [2 ** 30, 'GB'],
  [2 ** 20, 'MB'],
  [2 ** 10, 'KB'],
  [0, 'b'],
];

/** Celery's `humanbytes`: `61.25MB` — whole numbers bare, others to 5 significant digits, as Python's `{:.5}`. */
export function humanBytes(bytes: number): string {
  for (const [div, unit] of UNITS) {
    if (bytes >= div) {
      const value = div ? bytes / div : bytes;
      return `${Number.isInteger(value) ? String(value) : formatSignificant(value, 5)}${unit}`;
    }
  }
  return `${bytes}b`;
}

/** Python's `'{0:.5}'.format(f)`: 5 significant digits, trailing zeros dropped. */
function formatSignificant(value: number, digits: number): string {
  return String(Number(value.toPrecision(digits)));
}

/** Celery's `sample(x, n)`: every (len / n)-th item. */
function spread<T>(items: readonly T[], n: number): T[] {
  const step = Math.floor(items.length / n);
  const out: T[] = [];
  for (let index = 0; out.length < n && index < items.length; index += step) out.push(items[index] as T);
  return out;
}
