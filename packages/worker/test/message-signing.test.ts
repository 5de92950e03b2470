/**
 * Message signing settings: Celery's names, `app.setupSecurity()` as Celery's `app.setup_security()`, and start-up
 * refusals (a setting missing, an expired certificate in the store). The wire is tested in signing-interop.test.ts.
 */
import { defaultSerializers, SecurityError } from '@kq/core';
import { afterAll, describe, expect, it } from 'vitest';
import { makeSigningCertificates } from '../../core/test/helpers/signing-certificates';
import { App } from '../src/app/app';
import { ImproperlyConfigured } from '../src/errors/errors';

const certs = makeSigningCertificates();
afterAll(() => certs.remove());

describe('message signing settings', () => {
  it("takes Celery's names and sets up the auth serializer when the configuration names it", () => {
    const app = new App('signing', {
      security_key: certs.workerKey,
      security_certificate: certs.workerCertificate,
      security_cert_store: `${certs.store}/*.pem`,
      security_digest: 'sha512',
      security_key_password: null,
      task_serializer: 'auth',
      accept_content: ['auth'],
    });
    expect(app.conf).toMatchObject({ securityKey: certs.workerKey, securityCertificate: certs.workerCertificate, securityDigest: 'sha512', taskSerializer: 'auth' });
    const auth = defaultSerializers.codec('auth');
    expect(auth.contentType).toBe('application/data');
    expect(defaultSerializers.decode({ body: auth.encode([1]), contentType: 'application/data' }, { accept: ['auth'] })).toEqual([1]);
  });

  it('setupSecurity() signs what the app sends and accepts only signed messages, reading the files now', () => {
    const app = new App('signing');
    expect(app.conf.taskSerializer).toBe('json');
    app.setupSecurity({ securityKey: certs.encryptedWorkerKey, securityKeyPassword: certs.passphrase, securityCertificate: certs.workerCertificate, securityCertStore: certs.store });
    expect(app.conf).toMatchObject({ taskSerializer: 'auth', acceptContent: ['auth'], securityKey: certs.encryptedWorkerKey });
    expect(app.producer).toBeDefined();
  });

  it('refuses to start when a setting is missing, naming it', () => {
    expect(() => new App('signing', { acceptContent: ['auth'], securityKey: certs.workerKey })).toThrow(ImproperlyConfigured);
    expect(() => new App('signing', { acceptContent: ['auth'], securityKey: certs.workerKey })).toThrow(
      /needs securityCertificate \(security_certificate\), securityCertStore \(security_cert_store\)/,
    );
    expect(() => new App('signing').setupSecurity()).toThrow(/needs securityKey \(security_key\), securityCertificate/);
  });

  it('refuses a store holding a certificate that is not one, and a key file that is missing', () => {
    expect(() => new App('signing').setupSecurity({ securityKey: certs.workerKey, securityCertificate: certs.workerCertificate, securityCertStore: certs.dir })).toThrow(SecurityError);
    expect(() => new App('signing').setupSecurity({ securityKey: `${certs.dir}/nope.key`, securityCertificate: certs.workerCertificate, securityCertStore: certs.store })).toThrow(
      /Cannot read securityKey ".*nope\.key"/,
    );
  });
});
