/**
 * Message signing for upstream's test_security.py on a kq worker. The test makes its own key and self-signed
 * certificate in a `tempfile.mkdtemp()` folder (`worker.key`, `worker.pem`) once pytest is running, then sends
 * `add` signed with them (`task_serializer='auth'`). The harness points pytest's TMPDIR at the run's folder, and the
 * kq worker trusts the certificates that appear there: its store looks again when a message names a signer it does
 * not know yet. The worker's own key and certificate (which it would sign with) are made with openssl at start.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Certificate, CertificateStore, createAuthSerializer, defaultSerializers } from '@kq/core';

const run = promisify(execFile);

/** The worker's own RSA key and self-signed certificate, made with openssl in `dir` (worker-own.key, worker-own.pem). */
export async function makeWorkerCertificate(dir: string): Promise<{ key: string; certificate: string }> {
  const key = join(dir, 'worker-own.key');
  const certificate = join(dir, 'worker-own.pem');
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', certificate, '-days', '2', '-subj', '/CN=kq celery-suite worker']);
  return { key, certificate };
}

/**
 * A certificate store that, asked for a signer it lacks, reads the `worker.pem` files under `testTmp` again (the
 * folders pytest's tempfile made since) and adds the new ones.
 */
export class TestCertificateStore extends CertificateStore {
  readonly #testTmp: string;
  readonly #read = new Set<string>();

  constructor(testTmp: string, own: string) {
    super();
    this.#testTmp = testTmp;
    this.add(new Certificate(readFileSync(own), own));
  }

  override find(id: string): Certificate | undefined {
    return super.find(id) ?? (this.#rescan(), super.find(id));
  }

  #rescan(): void {
    if (!existsSync(this.#testTmp)) return;
    for (const folder of readdirSync(this.#testTmp)) {
      const path = join(this.#testTmp, folder, 'worker.pem');
      if (this.#read.has(path) || !existsSync(path)) continue;
      this.#read.add(path);
      this.add(new Certificate(readFileSync(path), path));
    }
  }
}

/**
 * The settings that make an app accept signed messages next to JSON, with the worker's own key; call
 * `trustTestCertificates` once the app exists.
 */
export function signingSettings(own: { key: string; certificate: string }): Record<`${string}_${string}`, unknown> {
  return { security_key: own.key, security_certificate: own.certificate, security_cert_store: own.certificate, accept_content: ['json', 'auth'] };
}

/** Replaces the `auth` serializer the app registered with one whose store finds the test's certificates. */
export function trustTestCertificates(own: { key: string; certificate: string }, testTmp: string): void {
  defaultSerializers.register(
    createAuthSerializer({ key: readFileSync(own.key), certificate: readFileSync(own.certificate), store: new TestCertificateStore(testTmp, own.certificate) }),
  );
}
