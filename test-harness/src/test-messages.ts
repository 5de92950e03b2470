import type { Delivery, Headers, MessageProperties, OutgoingMessage } from '@kq/core';

export interface TestMessageExtras {
  contentType?: string;
  contentEncoding?: string;
  headers?: Headers;
  properties?: MessageProperties;
}

/** A message whose body is `body` (UTF-8 when a string); the suite identifies messages by their body. */
export function testMessage(body: string | Buffer, extras: TestMessageExtras = {}): OutgoingMessage {
  return {
    body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body,
    contentType: extras.contentType ?? 'text/plain',
    contentEncoding: extras.contentEncoding ?? 'utf-8',
    headers: { ...(extras.headers ?? {}) },
    properties: { ...(extras.properties ?? {}) },
  };
}

/** The body of a delivery as text: the id the suite gave the message. */
export function bodyText(delivery: Delivery): string {
  return delivery.body.toString('utf8');
}

/** `prefix-0` … `prefix-(count-1)`: ids for a batch of messages. */
export function messageIds(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}-${index}`);
}

/** Every value of `values` that occurs more than once. */
export function duplicatesOf(values: readonly string[]): string[] {
  const seen = new Set<string>();
  const duplicates = new Set<string>();
  for (const value of values) {
    if (seen.has(value)) duplicates.add(value);
    seen.add(value);
  }
  return [...duplicates];
}

/** A deterministic pseudo-random generator (mulberry32), so load patterns are the same on every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A copy of `items` in a pseudo-random order (Fisher–Yates with the given generator). */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}
