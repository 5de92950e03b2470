import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { SecurityError } from '../errors';
import { Certificate } from './certificate';
import type { CertificateStore } from './certificate-store';
import { AUTH_SERIALIZER, type Codec } from './codec';
import { rsaModulusBits, signatureDigest, signRsaPss } from './rsa-pss-signature';
import { defaultSerializers, type SerializerRegistry } from './serializer-registry';

/*
 * Celery's `auth` serializer (celery/security/serialization.py). The value is serialized with the inner serializer
 * (`security_serializer`, json), the serialized body is signed, and five fields are joined by the two bytes 00 01 and
 * base64-encoded as a whole; the message says content type `application/data`, encoding `utf-8`:
 *
 *   Celery 5.5+      base64(signer id) 00 01 base64(signature) 00 01 content type 00 01 content encoding 00 01 body
 *   Celery 5.2–5.4   signer id         00 01 signature         00 01 content type 00 01 content encoding 00 01 body
 *
 * The older layout cuts the raw signature out by the signer's key size (bits / 8 bytes), since it may contain 00 01.
 * Neither Celery reads the other's layout; kq reads both (a signer id always contains a space, base64 never does)
 * and writes the one `legacyLayout` chooses. What is signed is the serialized body, so the signature is checked
 * before anything is parsed.
 */

const SEPARATOR = Buffer.from([0x00, 0x01]);
const FIELDS = 5;

export interface AuthSerializerOptions {
  /** The certificates whose signatures are trusted (`loadCertificateStore(securityCertStore)`). */
  store: CertificateStore;
  /** PEM private key that signs (`security_key`'s contents); without it this serializer only verifies. */
  key?: string | Buffer;
  /** Passphrase of an encrypted key (Celery 5.3's `security_key_password`). */
  keyPassword?: string;
  /** PEM certificate of `key` (`security_certificate`'s contents): messages name it as their signer. */
  certificate?: string | Buffer;
  /** Celery's `security_digest`: `sha256` by default. */
  digest?: string;
  /** What serializes the value before it is signed (`security_serializer`): `json` by default. */
  serializer?: string;
  /** Sign in Celery 5.2–5.4's layout, for fleets with Python workers older than 5.5 (default: 5.5+'s). */
  legacyLayout?: boolean;
  /** Where the inner serializer is looked up; the shared registry by default. */
  registry?: SerializerRegistry;
}

/** The `auth` serializer as a codec (`application/data`, `utf-8`). */
export function createAuthSerializer(options: AuthSerializerOptions): Codec {
  const registry = options.registry ?? defaultSerializers;
  const digest = signatureDigest(options.digest ?? 'sha256');
  const inner = options.serializer ?? 'json';
  if (inner === AUTH_SERIALIZER || registry.has(inner) === false) {
    throw new SecurityError(`securitySerializer ${JSON.stringify(inner)} cannot serialize what is signed: name a registered serializer other than auth (json, the default).`);
  }
  const signer = signerOf(options);
  const { store } = options;
  return {
    name: AUTH_SERIALIZER,
    contentType: 'application/data',
    contentEncoding: 'utf-8',
    encode(value: unknown): Buffer {
      if (signer === undefined) {
        throw new SecurityError('Cannot sign: no securityKey and securityCertificate are configured, so this process can only verify signed messages.');
      }
      const encoded = registry.encode(value, inner);
      const signature = signRsaPss(encoded.body, signer.key, digest);
      const id = Buffer.from(signer.certificate.id, 'utf8');
      const head = options.legacyLayout ? [id, signature] : [Buffer.from(id.toString('base64')), Buffer.from(signature.toString('base64'))];
      const fields = [...head, Buffer.from(encoded.contentType), Buffer.from(encoded.contentEncoding), encoded.body];
      return Buffer.from(joinFields(fields).toString('base64'));
    },
    decode(body: Buffer): unknown {
      const signed = unpack(Buffer.from(body.toString('latin1'), 'base64'), store);
      signed.certificate.verify(signed.body, signed.signature, digest);
      // Celery loads the verified body with `force=True`: the inner type is trusted because its signer is. Raw data
      // stays bytes (decoding it by content type would come back here).
      if (signed.contentType === 'application/data' || signed.contentType === '') return signed.body;
      return registry.decode({ body: signed.body, contentType: signed.contentType, contentEncoding: signed.contentEncoding });
    },
  };
}

interface Signer {
  key: KeyObject;
  certificate: Certificate;
}

function signerOf(options: AuthSerializerOptions): Signer | undefined {
  if (options.key === undefined && options.certificate === undefined) return undefined;
  if (options.key === undefined || options.certificate === undefined) {
    throw new SecurityError('Signing needs both securityKey and securityCertificate (the key and its certificate); one of them is missing.');
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(options.keyPassword === undefined ? { key: options.key } : { key: options.key, passphrase: options.keyPassword });
  } catch (error) {
    const hint = options.keyPassword === undefined ? ' If the key is encrypted, give its passphrase as securityKeyPassword.' : ' Check securityKeyPassword.';
    throw new SecurityError(`Invalid private key (securityKey): ${error instanceof Error ? error.message : String(error)}.${hint}`, { cause: error });
  }
  rsaModulusBits(key);
  const certificate = new Certificate(options.certificate, 'securityCertificate');
  if (!createPublicKey(key).equals(certificate.publicKey)) {
    throw new SecurityError(`securityKey is not the key of securityCertificate (${JSON.stringify(certificate.id)}): messages would fail verification everywhere. Give the key the certificate was made for.`);
  }
  return { key, certificate };
}

interface SignedFields {
  certificate: Certificate;
  signature: Buffer;
  contentType: string;
  contentEncoding: string;
  body: Buffer;
}

function unpack(payload: Buffer, store: CertificateStore): SignedFields {
  const first = payload.indexOf(SEPARATOR);
  if (first <= 0) throw new SecurityError(`Unsigned or malformed message: it does not start with a signer (${describeBytes(payload)}). Only messages signed with the auth serializer are accepted.`);
  const signerField = payload.subarray(0, first);
  const legacy = store.find(signerField.toString('utf8'));
  if (legacy !== undefined) {
    // Celery 5.2–5.4: the raw signature's length is the key's size in bytes.
    const start = first + SEPARATOR.length;
    const end = start + (legacy.keyBits >> 3);
    if (!payload.subarray(end, end + SEPARATOR.length).equals(SEPARATOR)) throw malformed('the signature is not as long as its signer\'s key');
    const rest = splitFields(payload.subarray(end + SEPARATOR.length), 3);
    return { certificate: legacy, signature: payload.subarray(start, end), ...contentFields(rest[0], rest[1], rest[2]) };
  }
  const fields = splitFields(payload, FIELDS);
  const id = strictBase64(fields[0]).toString('utf8');
  const certificate = store.find(id);
  if (certificate === undefined) {
    const named = id !== '' && /\s/.test(id) ? id : signerField.toString('utf8');
    throw new SecurityError(`Unknown certificate: the message is signed by ${JSON.stringify(named)}, which is not in this worker's certificate store (securityCertStore). Add the sender's certificate to trust it.`);
  }
  return { certificate, signature: strictBase64(fields[1]), ...contentFields(fields[2], fields[3], fields[4]) };
}

function contentFields(contentType: Buffer | undefined, contentEncoding: Buffer | undefined, body: Buffer | undefined): Pick<SignedFields, 'contentType' | 'contentEncoding' | 'body'> {
  return { contentType: (contentType ?? Buffer.alloc(0)).toString('utf8'), contentEncoding: (contentEncoding ?? Buffer.alloc(0)).toString('utf8'), body: body ?? Buffer.alloc(0) };
}

/** The first `count - 1` separators split; the last field keeps any that follow (Python's `split(sep, maxsplit)`). */
function splitFields(payload: Buffer, count: number): Buffer[] {
  const fields: Buffer[] = [];
  let offset = 0;
  while (fields.length < count - 1) {
    const next = payload.indexOf(SEPARATOR, offset);
    if (next === -1) throw malformed(`it has ${fields.length + 1} fields where a signed message has ${FIELDS}`);
    fields.push(payload.subarray(offset, next));
    offset = next + SEPARATOR.length;
  }
  fields.push(payload.subarray(offset));
  return fields;
}

/**
 * Canonical base64 only: Python's decoder, like node's, ignores stray characters and the unused low bits of the last
 * character, so one signature would have several spellings. Refusing the others keeps a changed byte a refusal.
 */
function strictBase64(field: Buffer | undefined): Buffer {
  const text = (field ?? Buffer.alloc(0)).toString('latin1');
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : Buffer.alloc(0);
}

function joinFields(fields: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [];
  fields.forEach((field, index) => {
    if (index > 0) parts.push(SEPARATOR);
    parts.push(field);
  });
  return Buffer.concat(parts);
}

function malformed(why: string): SecurityError {
  return new SecurityError(`Malformed signed message: ${why}. Only messages signed with the auth serializer are accepted.`);
}

function describeBytes(payload: Buffer): string {
  return payload.length === 0 ? 'it is empty' : `it starts ${JSON.stringify(payload.subarray(0, 24).toString('latin1'))}`;
}
