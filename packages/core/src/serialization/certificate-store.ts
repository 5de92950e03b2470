import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { SecurityError } from '../errors';
import { Certificate } from './certificate';
import { globToRegExp } from '../glob-pattern';

/** The certificates whose signatures are trusted, by Celery's certificate id (Celery's `CertStore`). */
export class CertificateStore {
  readonly #certificates = new Map<string, Certificate>();

  /** Adds a certificate; two with the same id (issuer and serial) are refused, as Celery refuses them. */
  add(certificate: Certificate): void {
    if (this.#certificates.has(certificate.id)) {
      throw new SecurityError(`Duplicate certificate ${JSON.stringify(certificate.id)} (${certificate.source}): each certificate in the store needs its own issuer and serial number.`);
    }
    this.#certificates.set(certificate.id, certificate);
  }

  /** The certificate with this id, or undefined. */
  find(id: string): Certificate | undefined {
    return this.#certificates.get(id);
  }

  get size(): number {
    return this.#certificates.size;
  }

  [Symbol.iterator](): IterableIterator<Certificate> {
    return this.#certificates.values();
  }
}

/**
 * Reads Celery's `security_cert_store`: a directory (every file in it) or a glob (`/etc/ssl/certs/*.pem`; wildcards
 * `*`, `?` and `[...]` in the file name only, and, as Python's glob, `*` skips dot-files), each file one PEM
 * certificate. An expired certificate fails the whole load, as it fails Celery's `FSCertStore`.
 */
export function loadCertificateStore(path: string, now: Date = new Date()): CertificateStore {
  const files = certificateFiles(path);
  if (files.length === 0) {
    throw new SecurityError(`No certificates found at ${JSON.stringify(path)} (securityCertStore): give a directory of PEM certificates or a glob such as "/etc/ssl/certs/*.pem".`);
  }
  const store = new CertificateStore();
  for (const file of files) {
    const certificate = new Certificate(readFileSync(file), file);
    if (certificate.hasExpired(now)) {
      throw new SecurityError(`Expired certificate: ${JSON.stringify(certificate.id)} (${file}) expired ${certificate.validTo.toISOString()}. Renew it or remove it from the store.`);
    }
    store.add(certificate);
  }
  return store;
}

function certificateFiles(path: string): string[] {
  if (isDirectory(path)) return listFiles(path, () => true);
  const directory = dirname(path);
  const pattern = basename(path);
  if (!/[*?[]/.test(pattern)) return isFile(path) ? [path] : [];
  if (/[*?[]/.test(directory)) {
    throw new SecurityError(`securityCertStore ${JSON.stringify(path)} has wildcards in its directory part; kq expands them in the file name only (e.g. "/etc/ssl/certs/*.pem").`);
  }
  const matcher = globToRegExp(pattern);
  return isDirectory(directory) ? listFiles(directory, (name) => matcher.test(name)) : [];
}

function listFiles(directory: string, wanted: (name: string) => boolean): string[] {
  return readdirSync(directory)
    .filter((name) => !name.startsWith('.') && wanted(name))
    .map((name) => join(directory, name))
    .filter(isFile)
    .sort();
}

function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

function isFile(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
}
