import { readFileSync } from 'node:fs';
import { AUTH_SERIALIZER, createAuthSerializer, defaultSerializers, loadCertificateStore, SecurityError } from '@kq/core';
import type { AppConfig } from '../config/config';
import { ImproperlyConfigured } from '../errors/errors';

/** The settings message signing reads. */
export type SecuritySettings = Pick<
  AppConfig,
  'securityKey' | 'securityKeyPassword' | 'securityCertificate' | 'securityCertStore' | 'securityDigest' | 'securitySerializer' | 'securityLegacyLayout'
>;

/** True when the configuration signs (`taskSerializer: 'auth'`) or accepts signed messages. */
export function namesSigning(conf: Pick<AppConfig, 'taskSerializer' | 'acceptContent'>): boolean {
  return conf.taskSerializer === AUTH_SERIALIZER || conf.acceptContent.includes(AUTH_SERIALIZER);
}

/**
 * Registers the `auth` serializer (Celery's `register_auth`) on the shared registry from the settings: the key and
 * certificate sign what this process sends, the store's certificates verify what it receives. As in Kombu the
 * registry is the process's, so the last app to set up signing is the one whose key signs. Throws
 * `ImproperlyConfigured` when a setting is missing and `SecurityError` when a file cannot be used (an expired
 * certificate in the store, a key that is not the certificate's).
 */
export function registerMessageSigning(conf: SecuritySettings): void {
  const { securityKey, securityCertificate, securityCertStore } = conf;
  const missing = [
    securityKey ? undefined : 'securityKey (security_key)',
    securityCertificate ? undefined : 'securityCertificate (security_certificate)',
    securityCertStore ? undefined : 'securityCertStore (security_cert_store)',
  ].filter((name) => name !== undefined);
  if (!securityKey || !securityCertificate || !securityCertStore) {
    throw new ImproperlyConfigured(
      `Message signing (the auth serializer) needs ${missing.join(', ')}: the PEM key that signs, its certificate, ` +
        'and the directory or glob of the certificates to trust. See docs/security.md#signed-messages.',
    );
  }
  const codec = createAuthSerializer({
    key: readSecurityFile(securityKey, 'securityKey'),
    certificate: readSecurityFile(securityCertificate, 'securityCertificate'),
    store: loadCertificateStore(securityCertStore),
    digest: conf.securityDigest,
    serializer: conf.securitySerializer,
    legacyLayout: conf.securityLegacyLayout,
    ...(conf.securityKeyPassword ? { keyPassword: conf.securityKeyPassword } : {}),
  });
  defaultSerializers.register(codec);
}

function readSecurityFile(path: string, setting: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new SecurityError(`Cannot read ${setting} ${JSON.stringify(path)}: ${error instanceof Error ? error.message : String(error)}.`, { cause: error });
  }
}
