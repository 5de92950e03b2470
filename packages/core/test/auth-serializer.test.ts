/**
 * Celery's `auth` serializer (message signing): both Celery layouts, the refusals (unsigned, unknown signer, changed
 * after signing), the certificate store's rules (expired certificates, globs) and the certificate id Celery uses.
 * Interop with Python Celery is in packages/worker/test/signing-interop.test.ts.
 */
import fc from 'fast-check';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  Certificate,
  ContentDisallowed,
  createAuthSerializer,
  jsonCodec,
  loadCertificateStore,
  SecurityError,
  SerializerRegistry,
  type AuthSerializerOptions,
  type Codec,
} from '../src/index';
import { makeSigningCertificates } from './helpers/signing-certificates';

const certs = makeSigningCertificates();
afterAll(() => certs.remove());

const SEPARATOR = Buffer.from([0, 1]);
const WORKER_ID = 'US Acme Inc kq worker 4660';

function registryWith(options: Partial<AuthSerializerOptions> = {}): { registry: SerializerRegistry; auth: Codec } {
  const registry = new SerializerRegistry();
  registry.register(jsonCodec);
  const auth = createAuthSerializer({
    store: loadCertificateStore(certs.store),
    key: certs.read(certs.workerKey),
    certificate: certs.read(certs.workerCertificate),
    registry,
    ...options,
  });
  registry.register(auth);
  return { registry, auth };
}

/** The packed fields inside the base64 a signed body is. */
const unpacked = (body: Buffer): Buffer => Buffer.from(body.toString(), 'base64');
const repacked = (payload: Buffer): Buffer => Buffer.from(payload.toString('base64'));

describe('the auth serializer', () => {
  it("names the signer as Celery does: the issuer's values, then the serial number in decimal", () => {
    expect(new Certificate(certs.read(certs.workerCertificate)).id).toBe(WORKER_ID);
  });

  it("writes Celery 5.5+'s layout by default: base64 signer and signature, content type, encoding, body", () => {
    const { auth } = registryWith();
    const fields = unpacked(auth.encode([[1], {}, null])).toString('latin1').split('\u0000\u0001');
    expect(fields).toHaveLength(5);
    expect(Buffer.from(fields[0] as string, 'base64').toString()).toBe(WORKER_ID);
    expect(Buffer.from(fields[1] as string, 'base64')).toHaveLength(256); // RSA-2048
    expect(fields.slice(2)).toEqual(['application/json', 'utf-8', '[[1],{},null]']);
    expect(auth.contentType).toBe('application/data');
    expect(auth.contentEncoding).toBe('utf-8');
  });

  it("writes Celery 5.2-5.4's layout when asked: the raw signer id, then the raw signature of the key's length", () => {
    const { auth } = registryWith({ legacyLayout: true });
    const payload = unpacked(auth.encode({ a: 1 }));
    const id = Buffer.from(WORKER_ID);
    expect(payload.subarray(0, id.length).equals(id)).toBe(true);
    expect(payload.subarray(id.length, id.length + 2).equals(SEPARATOR)).toBe(true);
    const afterSignature = id.length + 2 + 256;
    expect(payload.subarray(afterSignature).toString('latin1')).toBe('\u0000\u0001application/json\u0000\u0001utf-8\u0000\u0001{"a":1}');
  });

  it('reads both layouts whichever it writes', () => {
    const current = registryWith();
    const legacy = registryWith({ legacyLayout: true });
    expect(current.auth.decode(legacy.auth.encode(['x', 1]))).toEqual(['x', 1]);
    expect(legacy.auth.decode(current.auth.encode(['y', 2]))).toEqual(['y', 2]);
  });

  it('refuses a message signed by a certificate that is not in the store, naming it', () => {
    const { auth } = registryWith();
    for (const legacyLayout of [false, true]) {
      const intruder = createAuthSerializer({
        store: loadCertificateStore(certs.intruderCertificate),
        key: certs.read(certs.intruderKey),
        certificate: certs.read(certs.intruderCertificate),
        legacyLayout,
      });
      const body = intruder.encode([[1], {}, null]);
      expect(() => auth.decode(body)).toThrow(SecurityError);
      expect(() => auth.decode(body)).toThrow(/Unknown certificate: the message is signed by "intruder \d+"/);
    }
  });

  it('refuses a message whose body was changed after it was signed', () => {
    const { auth } = registryWith();
    const payload = unpacked(auth.encode([[1], {}, null]));
    const tampered = Buffer.from(payload.toString('latin1').replace('[[1],', '[[2],'), 'latin1');
    expect(() => auth.decode(repacked(tampered))).toThrow(/Bad signature: the message does not match its sha256 signature by "US Acme Inc kq worker 4660"/);
  });

  it('refuses an unsigned message: outside the accept list with a reason that says so, or as raw data', () => {
    const { registry } = registryWith();
    const json = registry.encode([[1], {}, null], 'json');
    expect(() => registry.decode(json, { accept: ['auth'] })).toThrow(ContentDisallowed);
    expect(() => registry.decode(json, { accept: ['auth'] })).toThrow(/Refusing an unsigned message \(content type "application\/json"\): this consumer accepts only signed messages/);
    const raw = { body: Buffer.from(Buffer.from('[[1],{},null]').toString('base64')), contentType: 'application/data' };
    expect(() => registry.decode(raw, { accept: ['auth'] })).toThrow(/Unsigned or malformed message/);
  });

  it('refuses a digest the other side did not sign with', () => {
    const { auth } = registryWith();
    const other = registryWith({ digest: 'sha512' }).auth;
    expect(() => other.decode(auth.encode([1]))).toThrow(/Bad signature: .* sha512 signature/);
  });

  it('signs with an encrypted key given its passphrase, and says what is missing without it', () => {
    const { auth } = registryWith({ key: certs.read(certs.encryptedWorkerKey), keyPassword: certs.passphrase });
    expect(registryWith().auth.decode(auth.encode([7]))).toEqual([7]);
    expect(() => registryWith({ key: certs.read(certs.encryptedWorkerKey) })).toThrow(/securityKeyPassword/);
  });

  it('refuses a key that is not the certificate\'s, a digest it does not know, and signing without a key', () => {
    expect(() => registryWith({ key: certs.read(certs.intruderKey) })).toThrow(/securityKey is not the key of securityCertificate/);
    expect(() => registryWith({ digest: 'md4' })).toThrow(/Unknown security digest "md4"/);
    const verifyOnly = createAuthSerializer({ store: loadCertificateStore(certs.store) });
    expect(() => verifyOnly.encode([1])).toThrow(/Cannot sign/);
  });
});

describe("messages Python Celery signed", () => {
  const golden = JSON.parse(readFileSync(new URL('./fixtures/celery-signed-messages.json', import.meta.url), 'utf8')) as Record<string, unknown>;
  const dir = join(certs.dir, 'golden');
  mkdirSync(dir);
  writeFileSync(join(dir, 'celery.pem'), golden['certificate'] as string);
  const verifier = createAuthSerializer({ store: loadCertificateStore(dir) });

  it('names the certificate as Celery does', () => {
    expect(new Certificate(golden['certificate'] as string).id).toBe(golden['certificate_id']);
  });

  it.each(['celery_5_5_3', 'celery_5_2_6'])('verifies and reads what %s signed', (version) => {
    expect(verifier.decode(Buffer.from(golden[version] as string))).toEqual(golden['value']);
  });
});

describe('the certificate store', () => {
  it('refuses to load an expired certificate, as Celery refuses it', () => {
    const later = new Date(Date.now() + 31 * 86_400_000);
    expect(() => loadCertificateStore(certs.store, later)).toThrow(/Expired certificate: "US Acme Inc kq worker 4660"/);
  });

  it('reads a directory or a glob of the file name, skipping what does not match', () => {
    const dir = join(certs.dir, 'glob');
    mkdirSync(dir);
    expect(() => loadCertificateStore(join(dir, '*.pem'))).toThrow(/No certificates found/);
    copyFileSync(certs.workerCertificate, join(dir, 'worker.pem'));
    copyFileSync(certs.intruderCertificate, join(dir, 'intruder.pem'));
    copyFileSync(certs.intruderCertificate, join(dir, '.hidden.pem'));
    writeFileSync(join(dir, 'notes.txt'), 'not a certificate');
    const ids = (path: string): string[] => [...loadCertificateStore(path)].map((certificate) => certificate.id);
    expect(ids(join(dir, '*.pem'))).toEqual([expect.stringMatching(/^intruder \d+$/), WORKER_ID]);
    expect(ids(join(dir, 'w?rker.[op]em'))).toEqual([WORKER_ID]);
    expect(ids(certs.store)).toEqual([WORKER_ID]);
    expect(() => loadCertificateStore(dir)).toThrow(/Invalid certificate in .*notes\.txt/); // a directory: every file
  });

  it('refuses two certificates with the same issuer and serial', () => {
    copyFileSync(certs.workerCertificate, join(certs.dir, 'worker-one.pem'));
    copyFileSync(certs.workerCertificate, join(certs.dir, 'worker-two.pem'));
    expect(() => loadCertificateStore(join(certs.dir, 'worker-*.pem'))).toThrow(/Duplicate certificate "US Acme Inc kq worker 4660"/);
  });
});

describe('signing, as properties', () => {
  const { auth } = registryWith();
  const legacy = registryWith({ legacyLayout: true }).auth;

  it('round-trips any JSON value exactly as JSON alone does', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (value, useLegacy) => {
        const codec = useLegacy ? legacy : auth;
        expect(auth.decode(codec.encode(value))).toEqual(jsonCodec.decode(jsonCodec.encode(value)));
      }),
      { numRuns: 60 },
    );
  });

  it('refuses any single-byte change to the signer, signature or body; a change elsewhere never alters the value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), fc.nat(), fc.integer({ min: 1, max: 255 }), (value, useLegacy, at, xor) => {
        const payload = unpacked((useLegacy ? legacy : auth).encode(value));
        const index = at % payload.length;
        const changed = Buffer.from(payload);
        changed[index] = (changed[index] as number) ^ xor;
        const expected = jsonCodec.decode(jsonCodec.encode(value));
        let outcome: { value: unknown } | { error: unknown };
        try {
          outcome = { value: auth.decode(repacked(changed)) };
        } catch (error) {
          outcome = { error };
        }
        const bodyStart = payload.lastIndexOf(SEPARATOR) + SEPARATOR.length;
        // The content type and encoding labels are not signed (nor are they in Celery): a changed one is refused
        // (no such serializer) or is one kq does not read (the encoding).
        const inSignedPart = index >= bodyStart || index < signatureEnd(payload, useLegacy);
        if (inSignedPart) expect(outcome).toMatchObject({ error: expect.any(SecurityError) });
        else if ('value' in outcome) expect(outcome.value).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });
});

/** Where the signature field ends (signer and signature are what the bytes before it are). */
function signatureEnd(payload: Buffer, legacy: boolean): number {
  if (legacy) return Buffer.byteLength(WORKER_ID) + 2 + 256;
  const first = payload.indexOf(SEPARATOR);
  return payload.indexOf(SEPARATOR, first + 2);
}
