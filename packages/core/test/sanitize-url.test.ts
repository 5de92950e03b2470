import { describe, expect, it } from 'vitest';
import { sanitizeUrl } from '../src/sanitize-url';

describe('sanitizeUrl', () => {
  it('masks the password of a URL, and of every URL in a broker list', () => {
    expect(sanitizeUrl('amqp://guest:secret@h1:5672//')).toBe('amqp://guest:**@h1:5672//');
    expect(sanitizeUrl('redis://:secret@h1:6379/0')).toBe('redis://:**@h1:6379/0');
    expect(sanitizeUrl('amqp://u:one@h1//;amqp://u:two@h2//')).toBe('amqp://u:**@h1//;amqp://u:**@h2//');
    expect(sanitizeUrl('redis://h1:6379/0')).toBe('redis://h1:6379/0');
  });

  it('masks a password that holds @ or ; unencoded whole (such a URL connects: the last @ ends it)', () => {
    expect(new URL('redis://:p@ss@h1:6379/0').host).toBe('h1:6379');
    expect(sanitizeUrl('redis://:p@ss@h1:6379/0')).toBe('redis://:**@h1:6379/0');
    expect(sanitizeUrl('redis://:a;b@h1:6379/0')).toBe('redis://:**@h1:6379/0');
    expect(sanitizeUrl('amqp://u:a;b@h1//;amqp://u:c@d@h2//')).toBe('amqp://u:**@h1//;amqp://u:**@h2//');
    // an @ in the query string is no password's
    expect(sanitizeUrl('redis://h1:6379/0?name=a@b')).toBe('redis://h1:6379/0?name=a@b');
  });

  it('masks credentials given in the query string', () => {
    expect(sanitizeUrl('postgresql://u@h1/db?sslmode=require&sslpassword=hunter2&application_name=kq')).toBe('postgresql://u@h1/db?sslmode=require&sslpassword=**&application_name=kq');
    expect(sanitizeUrl('redis://h1:6379/0?password=hunter2')).toBe('redis://h1:6379/0?password=**');
    expect(sanitizeUrl('sqs://h1?access_key=AKIA1&secret_key=hunter2')).toBe('sqs://h1?access_key=**&secret_key=**');
  });
});
