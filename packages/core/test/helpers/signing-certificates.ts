import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Self-signed certificates made with openssl, as Celery's docs make them, in a temporary folder. */
export interface SigningCertificates {
  dir: string;
  /** `store/`: the trusted certificates (the worker's only). */
  store: string;
  workerKey: string;
  workerCertificate: string;
  /** The worker's key, encrypted with `passphrase`. */
  encryptedWorkerKey: string;
  passphrase: string;
  /** A key and certificate outside the store. */
  intruderKey: string;
  intruderCertificate: string;
  read(path: string): Buffer;
  remove(): void;
}

/** The worker's certificate has subject and issuer `/C=US/O=Acme Inc/CN=kq worker` and serial 4660. */
export function makeSigningCertificates(): SigningCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'kq-signing-'));
  const store = join(dir, 'store');
  mkdirSync(store);
  const workerKey = join(dir, 'worker.key');
  const workerCertificate = join(store, 'worker.pem');
  const intruderKey = join(dir, 'intruder.key');
  const intruderCertificate = join(dir, 'intruder.pem');
  const encryptedWorkerKey = join(dir, 'worker-encrypted.key');
  const passphrase = 'correct horse';
  const openssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', workerKey, '-out', workerCertificate, '-days', '30', '-set_serial', '4660', '-subj', '/C=US/O=Acme Inc/CN=kq worker');
  openssl('req', '-x509', '-newkey', 'rsa:3072', '-nodes', '-keyout', intruderKey, '-out', intruderCertificate, '-days', '30', '-subj', '/CN=intruder');
  openssl('pkey', '-in', workerKey, '-aes256', '-passout', `pass:${passphrase}`, '-out', encryptedWorkerKey);
  return {
    dir,
    store,
    workerKey,
    workerCertificate,
    encryptedWorkerKey,
    passphrase,
    intruderKey,
    intruderCertificate,
    read: (path) => readFileSync(path),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
