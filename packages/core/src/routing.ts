import type { ExchangeType } from './exchange';
import type { Headers } from './message';

/** A queue's binding to an exchange, as a virtual transport stores it. */
export interface BindingRecord {
  queue: string;
  routingKey: string;
  arguments: Readonly<Record<string, unknown>>;
}

const topicCache = new Map<string, (routingKey: string) => boolean>();

/**
 * AMQP topic matching: keys are dot-separated words; `*` matches exactly one word, `#` zero or more words.
 * (Kombu's Redis regex lets `*` span dots — a known Kombu quirk; kq routes by the AMQP rule.)
 */
export function topicMatches(pattern: string, routingKey: string): boolean {
  let matcher = topicCache.get(pattern);
  if (!matcher) {
    matcher = compileTopic(pattern);
    if (topicCache.size > 10_000) topicCache.clear();
    topicCache.set(pattern, matcher);
  }
  return matcher(routingKey);
}

function compileTopic(pattern: string): (routingKey: string) => boolean {
  if (pattern === '#') return () => true;
  if (!pattern.includes('*') && !pattern.includes('#')) return (key) => key === pattern;
  const words = pattern.split('.');
  return (key) => matchWords(words, key.split('.'));
}

/** Iterative matcher with backtracking on the last `#`, linear in practice and never exponential. */
function matchWords(pattern: readonly string[], key: readonly string[]): boolean {
  // reachable[i] = key words 0..i-1 can be consumed by the pattern words processed so far
  let reachable = new Array<boolean>(key.length + 1).fill(false);
  reachable[0] = true;
  for (const word of pattern) {
    const next = new Array<boolean>(key.length + 1).fill(false);
    if (word === '#') {
      let any = false;
      for (let i = 0; i <= key.length; i++) {
        any = any || reachable[i] === true;
        next[i] = any;
      }
    } else {
      for (let i = 0; i < key.length; i++) {
        if (reachable[i] && (word === '*' || word === key[i])) next[i + 1] = true;
      }
    }
    reachable = next;
  }
  return reachable[key.length] === true;
}

/**
 * The regex string Kombu stores in a topic binding's `_kombu.binding.*` member, so Python publishers can route
 * to queues kq declared (kombu/transport/virtual/exchange.py `TopicExchange.key_to_pattern`).
 */
export function kombuTopicPattern(bindingKey: string): string {
  // Python's escape_regex(key, '.#*'): every character but letters, digits and . # * is backslashed (NUL → \000),
  // so kq and Python write the same set member for a binding and each can remove the other's.
  const escaped = bindingKey.replace(/[^\p{L}\p{N}.#*]/gu, (char) => (char === '\0' ? '\\000' : `\\${char}`));
  const words = escaped.split('.').map((word) => (word === '*' ? '.*?[^\\.]' : word === '#' ? '.*?' : word));
  return `^${words.join('\\.')}$`;
}

/**
 * Headers exchange matching: `x-match` = `all` (default) or `any`, over the binding arguments that do not start
 * with `x-`. A binding argument with value null/undefined matches on the header's presence alone.
 */
export function headersMatch(bindingArguments: Readonly<Record<string, unknown>>, headers: Headers): boolean {
  const mode = bindingArguments['x-match'] === 'any' ? 'any' : 'all';
  const entries = Object.entries(bindingArguments).filter(([key]) => !key.startsWith('x-'));
  if (entries.length === 0) return mode === 'all';
  const matches = ([key, expected]: [string, unknown]): boolean =>
    Object.prototype.hasOwnProperty.call(headers, key) &&
    (expected === null || expected === undefined || sameValue(headers[key], expected));
  return mode === 'all' ? entries.every(matches) : entries.some(matches);
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a === 'object' && typeof b === 'object') return JSON.stringify(a) === JSON.stringify(b);
  return false;
}

/** The queues a message reaches through an exchange of `type` with these bindings; each queue at most once. */
export function routeMessage(
  type: ExchangeType,
  bindings: readonly BindingRecord[],
  routingKey: string,
  headers: Headers,
): string[] {
  const queues = new Set<string>();
  for (const binding of bindings) {
    let hit: boolean;
    switch (type) {
      case 'direct':
        hit = binding.routingKey === routingKey;
        break;
      case 'topic':
        hit = topicMatches(binding.routingKey, routingKey);
        break;
      case 'fanout':
        hit = true;
        break;
      case 'headers':
        hit = headersMatch(binding.arguments, headers);
        break;
    }
    if (hit) queues.add(binding.queue);
  }
  return [...queues];
}
