import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A certificate and its private key, as PEM files. */
export interface CertificateFiles {
  cert: string;
  key: string;
}

/**
 * Certificates for TLS tests, made with the openssl CLI in a temporary folder: a CA, a server certificate it signed
 * for 127.0.0.1 and localhost, a client certificate (mutual TLS), and the three ways a server certificate is wrong —
 * signed by another CA, expired, issued for another host name.
 */
export interface TestCertificates {
  dir: string;
  /** The CA that signed `server`, `client`, `expired` and `wrongHost`. */
  ca: string;
  /** A CA that signed none of them: a client trusting only it must refuse `server`. */
  otherCa: string;
  /** Valid for 127.0.0.1 and localhost. */
  server: CertificateFiles;
  /** A client certificate (CN kq-client) the CA signed, for mutual TLS. */
  client: CertificateFiles;
  /** A client certificate signed by `otherCa`: a server asking for client certificates must refuse it. */
  strangerClient: CertificateFiles;
  /** Valid for 127.0.0.1 and localhost, but only during one day of 2020. */
  expired: CertificateFiles;
  /** Valid, but for `kq-wrong-host.invalid` only. */
  wrongHost: CertificateFiles;
}

/** Makes a fresh set of test certificates under `dir` (default: a new temporary folder). Takes well under a second. */
export async function makeTestCertificates(dir: string = mkdtempSync(join(tmpdir(), 'kq-certs-'))): Promise<TestCertificates> {
  const file = (name: string): string => join(dir, name);
  const ca = await selfSignedCa(dir, 'ca', 'kq test CA');
  const otherCa = await selfSignedCa(dir, 'other-ca', 'kq stranger CA');
  const local = 'subjectAltName=IP:127.0.0.1,DNS:localhost';
  const server = await signed(dir, 'server', '127.0.0.1', ca, local);
  const client = await signed(dir, 'client', 'kq-client', ca, 'extendedKeyUsage=clientAuth');
  const strangerClient = await signed(dir, 'stranger-client', 'kq-client', otherCa, 'extendedKeyUsage=clientAuth');
  const wrongHost = await signed(dir, 'wrong-host', 'kq-wrong-host.invalid', ca, 'subjectAltName=DNS:kq-wrong-host.invalid');
  const expired = await expiredCertificate(dir, ca, local);
  return { dir, ca: file('ca.crt'), otherCa: file('other-ca.crt'), server, client, strangerClient, expired, wrongHost };
}

async function newKey(path: string): Promise<void> {
  // EC keys: made in milliseconds, where RSA takes a noticeable fraction of a second each.
  await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path]);
}

async function selfSignedCa(dir: string, name: string, subject: string): Promise<CertificateFiles> {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.crt`);
  await newKey(key);
  await run('openssl', [
    'req', '-x509', '-new', '-key', key, '-out', cert, '-days', '3650', '-subj', `/CN=${subject}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { cert, key };
}

async function signed(dir: string, name: string, commonName: string, ca: CertificateFiles, extension: string): Promise<CertificateFiles> {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.crt`);
  const request = join(dir, `${name}.csr`);
  const extensions = join(dir, `${name}.ext`);
  await newKey(key);
  await run('openssl', ['req', '-new', '-key', key, '-out', request, '-subj', `/CN=${commonName}`]);
  writeFileSync(extensions, `${extension}\n`);
  await run('openssl', [
    'x509', '-req', '-in', request, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', cert, '-days', '825', '-extfile', extensions,
  ]);
  return { cert, key };
}

/** `openssl ca` is the one openssl 3.0 command that takes a start date in the past (x509 -not_before came in 3.4). */
async function expiredCertificate(dir: string, ca: CertificateFiles, extension: string): Promise<CertificateFiles> {
  const key = join(dir, 'expired.key');
  const cert = join(dir, 'expired.crt');
  const request = join(dir, 'expired.csr');
  const caDir = join(dir, 'ca-db');
  mkdirSync(caDir, { recursive: true });
  writeFileSync(join(caDir, 'index.txt'), '');
  writeFileSync(join(caDir, 'serial'), '1000\n');
  const config = join(caDir, 'openssl.cnf');
  writeFileSync(
    config,
    [
      '[ca]',
      'default_ca = test_ca',
      '[test_ca]',
      `database = ${join(caDir, 'index.txt')}`,
      `serial = ${join(caDir, 'serial')}`,
      `new_certs_dir = ${caDir}`,
      'default_md = sha256',
      'policy = any',
      'unique_subject = no',
      'x509_extensions = server',
      '[any]',
      'commonName = supplied',
      '[server]',
      extension.replace('=', ' = '),
      '',
    ].join('\n'),
  );
  await newKey(key);
  await run('openssl', ['req', '-new', '-key', key, '-out', request, '-subj', '/CN=127.0.0.1']);
  await run('openssl', [
    'ca', '-batch', '-config', config, '-cert', ca.cert, '-keyfile', ca.key, '-in', request, '-out', cert, '-notext',
    '-startdate', '20200101000000Z', '-enddate', '20200102000000Z',
  ]);
  return { cert, key };
}
