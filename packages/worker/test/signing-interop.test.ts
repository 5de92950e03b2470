/**
 * Signed messages (Celery's `auth` serializer, `app.setup_security()`) between kq and Debian's Python Celery 5.2.6 on
 * Redis: a task signed by either side runs on the other, and a kq worker that accepts only signed messages refuses an
 * unsigned one, one signed by a certificate outside its store and one changed after signing — each logged with its
 * reason, kept in `_kq.dead`, and stored as the caller's FAILURE. Unit tests: packages/core/test/auth-serializer.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { type ChildProcess, execFileSync } from 'node:child_process';
import { createAuthSerializer, defaultSerializers, hasDeadLetters, loadCertificateStore, type DeadLetterBox } from '@kq/core';
import { brokerReachable, pythonAvailable, pythonInterpreter } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSigningCertificates, type SigningCertificates } from '../../core/test/helpers/signing-certificates';
import { App } from '../src/app/app';
import { TaskFailedError } from '../src/errors/errors';
import { Logger, type LogRecord } from '../src/log/logger';
import { prepareTaskMessage } from '../src/task/prepare-task-message';
import type { Worker } from '../src/runtime/worker';
import { runPythonClient, startPythonWorker } from './fixtures/python-client';

const DB = 12;
const BROKER = `redis://127.0.0.1:6379/${DB}`;
const ready = (await brokerReachable('redis', BROKER)) && (await pythonAvailable(['celery', 'cryptography']));
const resultReader = fileURLToPath(new URL('../../redis/test/interop/result_read.py', import.meta.url));

async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!ready)('signed messages between kq and Python Celery 5.2 on Redis', () => {
  const ns = `kqsig${randomUUID().slice(0, 8)}`;
  const kqQueue = `${ns}.kq`;
  const logged: LogRecord[] = [];
  let certs: SigningCertificates;
  let app: App;
  let worker: Worker;
  let python: ChildProcess;
  let pyEnv: Record<string, string>;

  beforeAll(async () => {
    certs = makeSigningCertificates();
    app = new App('signing', { broker: BROKER, backend: BROKER, taskDefaultQueue: kqQueue, controlExchange: ns });
    // Celery's order: settings, then setup_security(); Debian's Celery 5.2 reads only the 5.2-5.4 layout.
    app.setupSecurity({ securityKey: certs.workerKey, securityCertificate: certs.workerCertificate, securityCertStore: certs.store, securityLegacyLayout: true });
    app.task('interop.kq_add', (_ctx, x: number, y: number) => x + y);
    worker = app.worker({ hostname: `kq@${ns}`, concurrency: 1, logger: new Logger('signing', { level: 'error', sink: (record) => logged.push(record) }), cluster: false });
    await worker.start();
    pyEnv = { KQ_INTEROP_BROKER: BROKER, KQ_INTEROP_BACKEND: BROKER, KQ_INTEROP_PY_QUEUE: `${ns}.py`, KQ_INTEROP_NAMESPACE: ns, KQ_INTEROP_SECURITY_DIR: certs.dir };
    python = startPythonWorker(`py@${ns}`, pyEnv, ['-l', 'critical']);
  });

  afterAll(async () => {
    python?.kill('SIGKILL');
    await worker?.stop();
    await app?.close();
    certs?.remove();
  });

  it('a task kq signs runs on a Python worker that accepts only signed messages', async () => {
    const result = await app.sendTask<number>('interop.py_add', [2, 3], {}, { queue: `${ns}.py` });
    expect(await result.get({ timeout: 20_000 })).toBe(5);
  }, 30_000);

  it('a task Python signs runs on kq', async () => {
    const outcome = await runPythonClient('celery_client.py', { name: 'interop.kq_add', args: [4, 5], options: { queue: kqQueue } }, pyEnv);
    expect(outcome).toMatchObject({ status: 'SUCCESS', result: 9 });
  }, 30_000);

  it('refuses an unsigned message, one signed by an unknown certificate and one changed after signing: logged, dead-lettered, the reason stored', async () => {
    // Unsigned: sent as plain JSON.
    const unsigned = await app.sendTask('interop.kq_add', [1, 1], {}, { queue: kqQueue, serializer: 'json' });
    // Unknown signer: the same task message, signed again with a key and certificate outside the store.
    const intruder = createAuthSerializer({
      store: loadCertificateStore(certs.intruderCertificate),
      key: certs.read(certs.intruderKey),
      certificate: certs.read(certs.intruderCertificate),
      legacyLayout: true,
    });
    const foreign = prepareTaskMessage(app, 'interop.kq_add', [1, 2], { queue: kqQueue });
    const signedBody = defaultSerializers.decode(foreign.message);
    foreign.message.body = intruder.encode(signedBody);
    // Changed after signing: 1 + 3 becomes 1000 + 3 inside the signed JSON.
    const tampered = prepareTaskMessage(app, 'interop.kq_add', [1, 3], { queue: kqQueue });
    const packed = Buffer.from(tampered.message.body.toString(), 'base64').toString('latin1');
    expect(packed).toContain('[[1,3]');
    tampered.message.body = Buffer.from(Buffer.from(packed.replace('[[1,3]', '[[1000,3]'), 'latin1').toString('base64'));
    for (const prepared of [foreign, tampered]) {
      await app.producer.publishMessage(prepared.message, { exchange: prepared.exchange, routingKey: prepared.routingKey, declare: prepared.queue ? [prepared.queue] : [] });
    }

    const reasons = {
      [unsigned.id]: /^ContentDisallowed: Refusing an unsigned message \(content type "application\/json"\)/,
      [foreign.id]: /^SecurityError: Unknown certificate: the message is signed by "intruder \d+", which is not in this worker's certificate store/,
      [tampered.id]: /^SecurityError: Bad signature: the message does not match its sha256 signature by "US Acme Inc kq worker 4660"/,
    };
    // The caller's result says why, as Celery's exceptions.
    const stored = { [unsigned.id]: ['ContentDisallowed', 'kombu.exceptions'], [foreign.id]: ['SecurityError', 'celery.exceptions'], [tampered.id]: ['SecurityError', 'celery.exceptions'] };
    for (const [id, [excType, excModule]] of Object.entries(stored)) {
      const failure: unknown = await (await app.asyncResult(id)).get({ timeout: 20_000 }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(TaskFailedError);
      const { excMessage, ...rest } = failure as TaskFailedError;
      expect(rest).toMatchObject({ excType, excModule });
      expect(`${excType}: ${String(excMessage[0])}`).toMatch(reasons[id] as RegExp);
    }

    // Kept with the reason in _kq.dead.
    const transport = await app.connection.transport();
    expect(hasDeadLetters(transport)).toBe(true);
    const box = (transport as unknown as { deadLetters(): DeadLetterBox }).deadLetters();
    const letters = await waitFor(async () => {
      const listed = await box.list({ queue: kqQueue });
      return listed.length >= 3 ? listed : undefined;
    }, 'three dead letters');
    for (const [id, reason] of Object.entries(reasons)) {
      expect(letters.find((letter) => letter.headers['id'] === id)?.reason).toMatch(reason);
      // And logged.
      const unanchored = new RegExp(reason.source.slice(1));
      expect(logged.some((record) => record.level === 'error' && record.message.startsWith('Rejected message') && unanchored.test(record.message))).toBe(true);
    }

    // A Python caller reads Celery's exceptions: SecurityError from celery.exceptions.
    const read = execFileSync(pythonInterpreter, [resultReader, BROKER, '10', foreign.id, tampered.id, unsigned.id], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(read.map(({ type, module }) => [type, module])).toEqual([
      ['SecurityError', 'celery.exceptions'],
      ['SecurityError', 'celery.exceptions'],
      ['ContentDisallowed', 'kombu.exceptions'],
    ]);
  }, 40_000);
});
