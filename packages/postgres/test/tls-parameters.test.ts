// The PostgreSQL tls option as libpq's URL parameters; the connections themselves are tested on a private TLS server
// in test/security/postgres-tls.test.ts.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withTlsParameters } from '../src/index';

const dir = mkdtempSync(join(tmpdir(), 'kq-pg-tls-'));
const ca = join(dir, 'ca.pem');
writeFileSync(ca, '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n');

describe('withTlsParameters', () => {
  const base = 'postgresql://kq@db.internal:5432/kq?sslmode=disable&application_name=x';
  const params = (url: string): Record<string, string> => Object.fromEntries(new URL(url).searchParams);

  it('checks the CA and the host name by default (verify-full), winning over the URL', () => {
    expect(params(withTlsParameters(base, { caFile: ca, certFile: ca, keyFile: ca }))).toEqual({
      sslmode: 'verify-full',
      sslrootcert: ca,
      sslcert: ca,
      sslkey: ca,
      application_name: 'x',
    });
    expect(params(withTlsParameters(base, true)).sslmode).toBe('verify-full');
  });

  it("reads Kombu's names; checkHostname false is libpq's verify-ca, certReqs none is no-verify", () => {
    expect(params(withTlsParameters(base, { ssl_ca_certs: ca, ssl_check_hostname: 'false' }))).toMatchObject({ sslmode: 'verify-ca', uselibpqcompat: 'true', sslrootcert: ca });
    expect(params(withTlsParameters(base, { ssl_cert_reqs: 'CERT_NONE' })).sslmode).toBe('no-verify');
    expect(() => withTlsParameters(base, { checkHostname: false })).toThrow(/verify-ca, which needs the CA: set caFile/);
  });

  it('leaves the URL alone without an option', () => {
    expect(withTlsParameters(base, undefined)).toBe(base);
    expect(withTlsParameters(base, false)).toBe(base);
  });
});
