import { KqError, resolveTlsOptions, tlsSettingsOf, type TlsOption } from '@kq/core';

/** The TLS settings libpq's URL parameters can carry, which is how node-postgres reads them. */
const SUPPORTED = new Set(['caFile', 'certFile', 'keyFile', 'certReqs', 'checkHostname']);

/**
 * The connection string with a TLS option (kq's `TlsSettings` or Kombu's names, as the Redis and RabbitMQ transports
 * take) written as libpq's URL parameters, which every connection kq makes reads: `sslrootcert`, `sslcert`, `sslkey`
 * and `sslmode` — `verify-full` by default (the CA and the host name checked), `verify-ca` without the host name
 * check (`checkHostname: false`, libpq's meaning), `no-verify` for `certReqs: 'none'`. The option wins over the
 * URL's own parameters. Without an option (undefined or false) the URL is returned as it is.
 */
export function withTlsParameters(connectionString: string, option: TlsOption | undefined): string {
  if (option === undefined || option === false) return connectionString;
  const settings = tlsSettingsOf(option);
  const unsupported = Object.keys(settings).filter((name) => !SUPPORTED.has(name));
  if (unsupported.length > 0) {
    throw new KqError(
      `The PostgreSQL tls option takes caFile, certFile, keyFile, certReqs and checkHostname (libpq's sslrootcert, sslcert, ` +
        `sslkey and sslmode), not ${unsupported.join(', ')}; give certificates as files.`,
    );
  }
  // Read once here, so a missing or unreadable file fails at once, naming the setting and the path.
  resolveTlsOptions(settings);
  const url = new URL(connectionString);
  const query = url.searchParams;
  if (settings.caFile) query.set('sslrootcert', settings.caFile);
  if (settings.certFile) query.set('sslcert', settings.certFile);
  if (settings.keyFile) query.set('sslkey', settings.keyFile);
  if (settings.certReqs === 'none') {
    query.set('sslmode', 'no-verify');
  } else if (settings.checkHostname === false) {
    if (!settings.caFile) {
      throw new KqError('checkHostname: false on PostgreSQL is libpq\'s sslmode=verify-ca, which needs the CA: set caFile (ssl_ca_certs) too.');
    }
    query.set('sslmode', 'verify-ca');
    query.set('uselibpqcompat', 'true');
  } else {
    query.set('sslmode', 'verify-full');
    query.delete('uselibpqcompat');
  }
  return url.toString();
}
