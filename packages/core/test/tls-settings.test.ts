import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KqError, TlsFailure, kombuSslFromQuery, resolveTlsOptions, tlsFailureOf } from '../src/index';

const dir = mkdtempSync(join(tmpdir(), 'kq-tls-settings-'));
const file = (name: string, text: string): string => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
const ca = file('ca.pem', 'CA PEM');
const cert = file('cert.pem', 'CERT PEM');
const key = file('key.pem', 'KEY PEM');

describe('TLS settings by kq\'s and Kombu\'s names', () => {
  it('is off unless something turns it on', () => {
    expect(resolveTlsOptions(undefined, null, false)).toBeUndefined();
    expect(resolveTlsOptions(true)).toEqual({});
  });

  it("reads the files kq's names give", () => {
    const options = resolveTlsOptions({ caFile: ca, certFile: cert, keyFile: key, certReqs: 'required' });
    expect(options).toMatchObject({ rejectUnauthorized: true });
    expect(String(options?.ca)).toBe('CA PEM');
    expect(String(options?.cert)).toBe('CERT PEM');
    expect(String(options?.key)).toBe('KEY PEM');
  });

  it.each([
    ['redis-py / broker_use_ssl on Redis', { ssl_cert_reqs: 'required', ssl_ca_certs: ca, ssl_certfile: cert, ssl_keyfile: key }],
    ['py-amqp / broker_use_ssl on RabbitMQ', { cert_reqs: 'CERT_REQUIRED', ca_certs: ca, certfile: cert, keyfile: key }],
    ['Python\'s ssl.CERT_REQUIRED as a number', { ssl_cert_reqs: 2, ssl_ca_certs: ca, ssl_certfile: cert, ssl_keyfile: key }],
  ])("reads Kombu's names (%s) as kq's", (_label, kombu) => {
    expect(resolveTlsOptions(kombu)).toEqual(resolveTlsOptions({ caFile: ca, certFile: cert, keyFile: key, certReqs: 'required' }));
  });

  it('turns checks off only when told to: certReqs none, or checkHostname false', () => {
    expect(resolveTlsOptions({ ssl_cert_reqs: 'CERT_NONE' })).toEqual({ rejectUnauthorized: false });
    expect(resolveTlsOptions({ ssl_cert_reqs: 0 })).toEqual({ rejectUnauthorized: false });
    const lax = resolveTlsOptions({ ssl_check_hostname: 'false' });
    expect(lax?.checkServerIdentity?.('other.host', {} as never)).toBeUndefined();
    expect(resolveTlsOptions({ caFile: ca })?.checkServerIdentity).toBeUndefined();
  });

  it('lets later options win name by name (a URL\'s parameters, then the option)', () => {
    const query = kombuSslFromQuery(new URLSearchParams({ ssl_cert_reqs: 'none', ssl_ca_certs: ca, other: 'x' }));
    expect(query).toEqual({ ssl_cert_reqs: 'none', ssl_ca_certs: ca });
    expect(resolveTlsOptions(true, query, { certReqs: 'required' })).toMatchObject({ rejectUnauthorized: true });
  });

  it('fails at once, naming the setting and the path, on a file it cannot read or a value it does not know', () => {
    expect(() => resolveTlsOptions({ ssl_ca_certs: join(dir, 'missing.pem') })).toThrow(
      new KqError(`Cannot read the file ssl_ca_certs (caFile) names, ${join(dir, 'missing.pem')} (ENOENT); give the path of a PEM file this process can read.`),
    );
    expect(() => resolveTlsOptions({ ssl_cert_reqs: 'sometimes' })).toThrow(/ssl_cert_reqs \(certReqs\) must be required, optional or none/);
  });
});

describe('TLS failures as one line', () => {
  const failure = (code: string, message = 'x', extra: Record<string, unknown> = {}): unknown => Object.assign(new Error(message), { code, ...extra });

  it.each([
    ['SELF_SIGNED_CERT_IN_CHAIN', /not signed by a CA this client trusts; set ssl_ca_certs/],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', /not signed by a CA this client trusts/],
    ['CERT_HAS_EXPIRED', /certificate has expired; renew it on the server/],
    ['ERR_SSL_WRONG_VERSION_NUMBER', /did not answer in TLS \(a plaintext port\?\)/],
    ['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', /requires a client certificate \(mutual TLS\); set ssl_certfile and ssl_keyfile/],
  ])('%s', (code, says) => {
    const tls = tlsFailureOf(failure(code), 'rediss://h:6380');
    expect(tls).toBeInstanceOf(TlsFailure);
    expect(tls?.recoverable).toBe(false);
    expect(tls?.message).toMatch(new RegExp(`^TLS connection to rediss://h:6380 failed: .*\\(${code}\\)$`));
    expect(tls?.message).toMatch(says);
  });

  it('names the host and the names the certificate has on a host name mismatch', () => {
    const error = failure('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames", { host: 'h', cert: { subjectaltname: 'DNS:other' } });
    expect(tlsFailureOf(error, 'amqps://h:5671/')?.message).toBe(
      "TLS connection to amqps://h:5671/ failed: the server's certificate is for DNS:other, not for h; connect by a name the certificate lists, or issue one for this name (ERR_TLS_CERT_ALTNAME_INVALID)",
    );
  });

  it("names node-postgres's refusal by a server with ssl off, which carries no code", () => {
    const tls = tlsFailureOf(new Error('The server does not support SSL connections'), 'postgresql://pg:5432/kq');
    expect(tls?.code).toBe('SSL_NOT_SUPPORTED');
    expect(tls?.message).toMatch(/^TLS connection to postgresql:\/\/pg:5432\/kq failed: the server does not speak TLS \(PostgreSQL with ssl = off\)/);
  });

  it('leaves outages alone: they are retried', () => {
    expect(tlsFailureOf(failure('ECONNREFUSED'), 't')).toBeUndefined();
    expect(tlsFailureOf(new Error('Connection is closed.'), 't')).toBeUndefined();
  });
});
