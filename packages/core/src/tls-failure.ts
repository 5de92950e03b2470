import { TlsFailure } from './errors';

/** What each Node/OpenSSL TLS error code means for a client, and what to do about it. */
const UNTRUSTED = "the server's certificate is not signed by a CA this client trusts; set ssl_ca_certs (caFile) to the CA that signed it";
const REASONS: Readonly<Record<string, string>> = {
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: UNTRUSTED,
  UNABLE_TO_GET_ISSUER_CERT: UNTRUSTED,
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: UNTRUSTED,
  SELF_SIGNED_CERT_IN_CHAIN: UNTRUSTED,
  DEPTH_ZERO_SELF_SIGNED_CERT: UNTRUSTED,
  CERT_SIGNATURE_FAILURE: UNTRUSTED,
  CERT_UNTRUSTED: UNTRUSTED,
  CERT_HAS_EXPIRED: "the server's certificate has expired; renew it on the server",
  CERT_NOT_YET_VALID: "the server's certificate is not valid yet; check the clocks of the server and this host",
  CERT_REVOKED: "the server's certificate has been revoked; install a new one on the server",
  ERR_SSL_WRONG_VERSION_NUMBER: 'the server did not answer in TLS (a plaintext port?); use its TLS port, or a non-TLS URL if it has none',
  ERR_SSL_PACKET_LENGTH_TOO_LONG: 'the server did not answer in TLS (a plaintext port?); use its TLS port, or a non-TLS URL if it has none',
  ERR_SSL_TLSV1_ALERT_UNKNOWN_CA:
    "the server does not trust this client's certificate; set ssl_certfile/ssl_keyfile (certFile/keyFile) to a certificate signed by a CA the server trusts",
  ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE:
    "the server refused this client's certificate; set ssl_certfile/ssl_keyfile (certFile/keyFile) to a certificate signed by a CA the server trusts",
  ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    'the server requires a client certificate (mutual TLS); set ssl_certfile and ssl_keyfile (certFile, keyFile)',
  ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE: 'the server and this client share no TLS version or cipher; check the TLS settings of both',
};

/**
 * The TLS failure `error` is, as a `TlsFailure` naming `target` (a URL without its password) and the cause in one
 * line, or undefined when it is not a TLS failure (a refused or dropped connection is an outage: retried).
 */
export function tlsFailureOf(error: unknown, target: string): TlsFailure | undefined {
  if (error instanceof TlsFailure) return error;
  if (typeof error !== 'object' || error === null) return undefined;
  const message = error instanceof Error ? error.message : '';
  // node-postgres, when the server answers the SSLRequest with "no": an Error without a code.
  if (message === 'The server does not support SSL connections') {
    const reason = 'the server does not speak TLS (PostgreSQL with ssl = off); turn ssl on in postgresql.conf, or connect without sslmode/tls if it must stay off';
    return new TlsFailure(target, 'SSL_NOT_SUPPORTED', reason, { cause: error });
  }
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return undefined;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    // Node puts the name it checked and the certificate on the error.
    const { host, cert } = error as { host?: unknown; cert?: { subjectaltname?: unknown; subject?: { CN?: unknown } } };
    const names = typeof cert?.subjectaltname === 'string' ? cert.subjectaltname : typeof cert?.subject?.CN === 'string' ? `CN=${cert.subject.CN}` : 'other names';
    const reason =
      `the server's certificate is for ${names}, not for ${typeof host === 'string' ? host : 'the host connected to'}; ` +
      'connect by a name the certificate lists, or issue one for this name';
    return new TlsFailure(target, code, reason, { cause: error });
  }
  const reason = REASONS[code];
  if (reason !== undefined) return new TlsFailure(target, code, reason, { cause: error });
  if (/^ERR_(SSL|TLS)_/.test(code)) return new TlsFailure(target, code, message.replace(/\s+/g, ' ').trim(), { cause: error });
  return undefined;
}
