import { constants, createHash, getHashes, sign, verify, type KeyObject } from 'node:crypto';
import { SecurityError } from '../errors';

/*
 * Celery signs with RSA-PSS: MGF1 over the message digest and the longest salt the key allows
 * (`padding.PSS(mgf=padding.MGF1(digest), salt_length=padding.PSS.MAX_LENGTH)`), and verifies expecting that same
 * salt length. Python's `cryptography` computes it as emLen - hLen - 2 with emLen = ceil((modulusBits - 1) / 8).
 */

/** A digest as Celery names it (`security_digest`: `sha256`, `sha512`, `sha3_256`...), resolved for node:crypto. */
export interface SignatureDigest {
  /** The name as configured. */
  readonly name: string;
  /** node:crypto's name for it (`sha3-256`). */
  readonly algorithm: string;
  /** Its output length in bytes. */
  readonly length: number;
}

/** Resolves Celery's digest name (`cryptography.hazmat.primitives.hashes.<NAME.upper()>`) to node's. */
export function signatureDigest(name: string): SignatureDigest {
  // Python's SHA3_256 / SHA512_224 are node's sha3-256 / sha512-224.
  const algorithm = name.toLowerCase().replace(/^(sha3|sha512)_/, '$1-');
  if (!/^sha/.test(algorithm) || !getHashes().includes(algorithm)) {
    throw new SecurityError(
      `Unknown security digest ${JSON.stringify(name)}: use a SHA-2 or SHA-3 name as Celery spells it ` +
        `(sha256, the default; sha384, sha512, sha3_256...).`,
    );
  }
  return { name, algorithm, length: createHash(algorithm).digest().length };
}

/** The salt length Celery's PSS.MAX_LENGTH gives for this key and digest. */
function maxSaltLength(key: KeyObject, digest: SignatureDigest): number {
  const bits = rsaModulusBits(key);
  return Math.ceil((bits - 1) / 8) - digest.length - 2;
}

/** The key's modulus length in bits; refuses keys that are not RSA, as Celery does (PSS needs RSA). */
export function rsaModulusBits(key: KeyObject): number {
  const bits = key.asymmetricKeyType === 'rsa' ? key.asymmetricKeyDetails?.modulusLength : undefined;
  if (bits === undefined) {
    throw new SecurityError(`Message signing needs an RSA key, and this one is ${key.asymmetricKeyType ?? 'not asymmetric'}: create the key with "openssl req -newkey rsa:2048 ...".`);
  }
  return bits;
}

/** Signs `data` as Celery's `PrivateKey.sign` does. */
export function signRsaPss(data: Buffer, key: KeyObject, digest: SignatureDigest): Buffer {
  return sign(digest.algorithm, data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: maxSaltLength(key, digest) });
}

/** Verifies a signature as Celery's `Certificate.verify` does (false when it does not match). */
export function verifyRsaPss(data: Buffer, signature: Buffer, key: KeyObject, digest: SignatureDigest): boolean {
  try {
    return verify(digest.algorithm, data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: maxSaltLength(key, digest) }, signature);
  } catch {
    // OpenSSL throws for some malformed signatures (wrong length) rather than returning false.
    return false;
  }
}
