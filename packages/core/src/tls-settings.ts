import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { KqError } from './errors';

/** How a client checks the server's certificate: Python's `ssl.CERT_REQUIRED` / `CERT_OPTIONAL` / `CERT_NONE`. */
export type CertificateRequirement = 'required' | 'optional' | 'none';

/**
 * TLS settings by kq's names: files, read when the connection is made, and how strictly the server is checked. Any
 * Node `tls.connect` option (`ca`, `cert`, `key`, `servername`, `minVersion`...) may be given too.
 */
export interface TlsSettings extends ConnectionOptions {
  /** PEM file of the CA(s) the server's certificate must be signed by. Default: Node's bundled public CAs. */
  caFile?: string;
  /** PEM file of this client's certificate, for servers that require one (mutual TLS). */
  certFile?: string;
  /** PEM file of the client certificate's private key. */
  keyFile?: string;
  /**
   * `required` (default) and `optional` check the server's certificate (Python's client-side CERT_OPTIONAL verifies
   * too); `none` accepts any, which lets anyone in the middle read and change the traffic.
   */
  certReqs?: CertificateRequirement;
  /** Check that the certificate names the host connected to. Default true (even where redis-py's default is false). */
  checkHostname?: boolean;
}

/**
 * Kombu's and Celery's names for the same settings, as `broker_use_ssl`, `redis_backend_use_ssl` or a `rediss://`
 * URL's query spell them: `ssl_cert_reqs`, `ssl_ca_certs`, `ssl_certfile`, `ssl_keyfile`, `ssl_check_hostname`; py-amqp's
 * `cert_reqs`, `ca_certs`, `certfile`, `keyfile` too. `cert_reqs` is Python's `ssl.CERT_*` number (0, 1, 2) or name.
 */
export interface KombuSslOptions {
  ssl_cert_reqs?: string | number | null;
  ssl_ca_certs?: string | null;
  ssl_certfile?: string | null;
  ssl_keyfile?: string | null;
  ssl_check_hostname?: boolean | string | null;
  cert_reqs?: string | number | null;
  ca_certs?: string | null;
  certfile?: string | null;
  keyfile?: string | null;
  server_hostname?: string | null;
}

/** What a TLS option may be given as: kq's settings, Kombu's dict, or `true` (TLS with the defaults). */
export type TlsOption = TlsSettings | KombuSslOptions | boolean;

const KOMBU_NAMES: Readonly<Record<string, keyof TlsSettings>> = {
  ssl_cert_reqs: 'certReqs',
  cert_reqs: 'certReqs',
  ssl_ca_certs: 'caFile',
  ca_certs: 'caFile',
  ssl_certfile: 'certFile',
  certfile: 'certFile',
  ssl_keyfile: 'keyFile',
  keyfile: 'keyFile',
  ssl_check_hostname: 'checkHostname',
  server_hostname: 'servername',
};

/** The Kombu TLS names a `rediss://` / `amqps://` URL query may carry, as Kombu reads them there. */
export const KOMBU_TLS_QUERY_PARAMETERS: readonly string[] = ['ssl_cert_reqs', 'ssl_ca_certs', 'ssl_certfile', 'ssl_keyfile', 'ssl_check_hostname'];

/** The Kombu TLS parameters of a URL's query, as a `KombuSslOptions` (empty when there are none). */
export function kombuSslFromQuery(query: URLSearchParams): KombuSslOptions {
  const out: Record<string, string> = {};
  for (const name of KOMBU_TLS_QUERY_PARAMETERS) {
    const value = query.get(name);
    if (value !== null && value !== '') out[name] = value;
  }
  return out;
}

/**
 * Node `tls.connect` options from any number of TLS options (later ones win, name by name), or undefined when none
 * turns TLS on. Files are read here, so a missing one fails at once, naming the setting and the path.
 */
export function resolveTlsOptions(...given: readonly (TlsOption | undefined | null)[]): ConnectionOptions | undefined {
  let settings: TlsSettings | undefined;
  for (const option of given) {
    if (option === undefined || option === null || option === false) continue;
    settings = { ...settings, ...(option === true ? {} : toSettings(option)) };
  }
  if (settings === undefined) return undefined;
  const { caFile, certFile, keyFile, certReqs, checkHostname, ...node } = settings;
  const out: ConnectionOptions = { ...node };
  if (caFile) out.ca = readPem(caFile, 'ssl_ca_certs (caFile)');
  if (certFile) out.cert = readPem(certFile, 'ssl_certfile (certFile)');
  if (keyFile) out.key = readPem(keyFile, 'ssl_keyfile (keyFile)');
  if (certReqs === 'none') out.rejectUnauthorized = false;
  else if (certReqs !== undefined) out.rejectUnauthorized = true;
  if (checkHostname === false) out.checkServerIdentity = () => undefined;
  return out;
}

/**
 * One TLS option as kq's `TlsSettings` (Kombu's names translated, `true` as no settings), without reading any file:
 * for transports that hand the files to their driver by name (PostgreSQL's libpq parameters).
 */
export function tlsSettingsOf(option: TlsOption): TlsSettings {
  return option === true || option === false ? {} : toSettings(option);
}

function toSettings(option: TlsSettings | KombuSslOptions): TlsSettings {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(option)) {
    if (value === undefined || value === null) continue;
    const mapped = KOMBU_NAMES[name] ?? name;
    if (mapped === 'certReqs') out[mapped] = certRequirement(value);
    else if (mapped === 'checkHostname') out[mapped] = flag(value, name);
    else out[mapped] = value;
  }
  return out as TlsSettings;
}

/** Python's `ssl.CERT_NONE` (0), `CERT_OPTIONAL` (1), `CERT_REQUIRED` (2), by number or by name, any case. */
function certRequirement(value: unknown): CertificateRequirement {
  const text = String(value).trim().toLowerCase().replace(/^(ssl\.)?cert_/, '');
  const named = ({ '0': 'none', '1': 'optional', '2': 'required' } as Record<string, CertificateRequirement>)[text] ?? text;
  if (named === 'none' || named === 'optional' || named === 'required') return named;
  throw new KqError(`ssl_cert_reqs (certReqs) must be required, optional or none (or CERT_REQUIRED, 2 ...), got ${JSON.stringify(value)}.`);
}

function flag(value: unknown, name: string): boolean {
  if (typeof value === 'boolean') return value;
  const text = String(value).trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(text)) return true;
  if (['false', '0', 'no', 'off'].includes(text)) return false;
  throw new KqError(`${name} must be true or false, got ${JSON.stringify(value)}.`);
}

function readPem(path: string, setting: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
    throw new KqError(`Cannot read the file ${setting} names, ${path} (${reason}); give the path of a PEM file this process can read.`, {
      cause: error,
    });
  }
}
