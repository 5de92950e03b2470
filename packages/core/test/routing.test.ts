import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { headersMatch, kombuTopicPattern, routeMessage, topicMatches } from '../src/routing';

/** An independent model of AMQP topic matching: try every way `#` can split the key. */
function modelMatches(pattern: string, key: string): boolean {
  const match = (p: readonly string[], k: readonly string[]): boolean => {
    if (p.length === 0) return k.length === 0;
    const [head, ...rest] = p;
    if (head === '#') {
      for (let i = 0; i <= k.length; i++) if (match(rest, k.slice(i))) return true;
      return false;
    }
    if (k.length === 0) return false;
    return (head === '*' || head === k[0]) && match(rest, k.slice(1));
  };
  return match(pattern.split('.'), key.split('.'));
}

const word = fc.constantFrom('a', 'b', 'c', 'kq', 'x1', '');
const patternWord = fc.oneof(word, fc.constant('*'), fc.constant('#'));

describe('topic matching', () => {
  it('agrees with a brute-force model of AMQP topic semantics', () => {
    fc.assert(
      fc.property(fc.array(patternWord, { minLength: 1, maxLength: 6 }), fc.array(word, { minLength: 1, maxLength: 6 }), (p, k) => {
        const pattern = p.join('.');
        const key = k.join('.');
        expect(topicMatches(pattern, key)).toBe(modelMatches(pattern, key));
      }),
      { numRuns: 2000 },
    );
  });

  it.each([
    ['*.orange.*', 'quick.orange.rabbit', true],
    ['*.orange.*', 'quick.orange.male.rabbit', false],
    ['lazy.#', 'lazy', true],
    ['lazy.#', 'lazy.pink.rabbit', true],
    ['#.rabbit', 'rabbit', true],
    ['#', '', true],
    ['*', '', true],
    ['a.*', 'a', false],
    ['worker.#', 'worker.heartbeat', true],
    ['worker.#', 'task.succeeded', false],
  ])('%s ~ %s = %s', (pattern, key, expected) => {
    expect(topicMatches(pattern, key)).toBe(expected);
  });

  it("writes Kombu's regex form for Redis binding members", () => {
    expect(kombuTopicPattern('worker.#')).toBe('^worker\\..*?$');
    expect(kombuTopicPattern('*.orange.*')).toBe('^.*?[^\\.]\\.orange\\..*?[^\\.]$');
    expect(kombuTopicPattern('a+b')).toBe('^a\\+b$');
    expect(kombuTopicPattern('my-key.#.a_b.*')).toBe('^my\\-key\\..*?\\.a\\_b\\..*?[^\\.]$');
  });
});

describe('headers matching', () => {
  it('matches all by default and any on request', () => {
    expect(headersMatch({ format: 'pdf', type: 'report' }, { format: 'pdf', type: 'report', extra: 1 })).toBe(true);
    expect(headersMatch({ format: 'pdf', type: 'report' }, { format: 'pdf' })).toBe(false);
    expect(headersMatch({ 'x-match': 'any', format: 'pdf', type: 'report' }, { format: 'pdf' })).toBe(true);
    expect(headersMatch({ 'x-match': 'any', format: 'zip' }, { format: 'pdf' })).toBe(false);
  });
});

describe('routeMessage', () => {
  const bindings = [
    { queue: 'q1', routingKey: 'a', arguments: {} },
    { queue: 'q2', routingKey: 'a', arguments: {} },
    { queue: 'q1', routingKey: '#', arguments: {} },
  ];
  it('delivers to each queue at most once', () => {
    expect(routeMessage('topic', bindings, 'a', {}).sort()).toEqual(['q1', 'q2']);
    expect(routeMessage('direct', bindings, 'a', {}).sort()).toEqual(['q1', 'q2']);
    expect(routeMessage('fanout', bindings, 'zzz', {}).sort()).toEqual(['q1', 'q2']);
    expect(routeMessage('direct', bindings, 'b', {})).toEqual([]);
  });
});
