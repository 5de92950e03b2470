import { describe, expect, it } from 'vitest';
import { sanitizeUrl } from '../src/sanitize-url';

describe('sanitizeUrl', () => {
  it('masks the password of a URL, and of every URL in a broker list', () => {
    expect(sanitizeUrl('amqp://guest:secret@h1:5672//')).toBe('amqp://guest:**@h1:5672//');
    expect(sanitizeUrl('redis://:secret@h1:6379/0')).toBe('redis://:**@h1:6379/0');
    expect(sanitizeUrl('amqp://u:one@h1//;amqp://u:two@h2//')).toBe('amqp://u:**@h1//;amqp://u:**@h2//');
    expect(sanitizeUrl('redis://h1:6379/0')).toBe('redis://h1:6379/0');
  });
});
