import { X509Certificate, type KeyObject } from 'node:crypto';
import { SecurityError } from '../errors';
import { celeryCertificateId } from './certificate-id';
import { rsaModulusBits, verifyRsaPss, type SignatureDigest } from './rsa-pss-signature';

/** An X.509 certificate that signed messages name as their signer (Celery's `celery.security.certificate.Certificate`). */
export class Certificate {
  /** Celery's id: issuer attribute values, then the serial number (`"US Acme worker 5142..."`). */
  readonly id: string;
  readonly publicKey: KeyObject;
  /** The RSA modulus in bits: Celery ≤ 5.4 cuts the signature out of a message by this length (bits / 8 bytes). */
  readonly keyBits: number;
  /** When it stops being valid (`notAfter`). */
  readonly validTo: Date;
  /** Where it was read from, for error messages. */
  readonly source: string;

  constructor(pem: string | Buffer, source = 'the certificate') {
    let x509: X509Certificate;
    try {
      x509 = new X509Certificate(pem);
    } catch (error) {
      throw new SecurityError(`Invalid certificate in ${source}: ${error instanceof Error ? error.message : String(error)}. Give a PEM X.509 certificate.`, { cause: error });
    }
    this.source = source;
    this.id = celeryCertificateId(x509.raw);
    this.publicKey = x509.publicKey;
    this.keyBits = rsaModulusBits(x509.publicKey);
    this.validTo = new Date(x509.validTo);
  }

  /** True from `notAfter` on, as Celery's `has_expired()`. */
  hasExpired(now: Date = new Date()): boolean {
    return now.getTime() >= this.validTo.getTime();
  }

  /** Throws `SecurityError` unless `signature` is this certificate's signature of `data`. */
  verify(data: Buffer, signature: Buffer, digest: SignatureDigest): void {
    if (!verifyRsaPss(data, signature, this.publicKey, digest)) {
      throw new SecurityError(
        `Bad signature: the message does not match its ${digest.name} signature by ${JSON.stringify(this.id)}; it was changed after it was signed, ` +
          `or signed with another key or digest (both sides need the same securityDigest).`,
      );
    }
  }
}
