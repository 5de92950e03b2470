// No output of a fleet holds a secret (#34): a private redis-server that needs a password (the broker's) and an ACL
// user (the result backend's), a `kq worker` logging at debug level to a file and serving /metrics, a `kq dashboard`
// with basic auth from KQ_DASHBOARD_AUTH and a state file, transport options with a sentinel password, an OTel
// exporter header token, and tasks that succeed, fail, and fail reaching a broker whose URL has a password. Then
// every output is searched for every secret: each process's stdout and stderr, the log file, the state file, every
// page and API reply of the dashboard (actions included), the worker's /metrics, and what `kq report`, `kq inspect`,
// `kq status`, `kq result` and `kq dlq list` print.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App } from '@kq/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const kqBin = fileURLToPath(new URL('../../worker/bin/kq.js', import.meta.url));
const appModule = fileURLToPath(new URL('./fixtures/secrets-app.ts', import.meta.url));

const haveRedisServer = spawnSync('redis-server', ['--version']).status === 0;
if (!haveRedisServer) {
  if (process.env['KQ_REQUIRE_BROKERS'] === '1') throw new Error('redis-server is missing; KQ_REQUIRE_BROKERS=1 makes that a failure. Install: apt-get install -y redis-server');
  console.warn('[kq] skipping the no-secrets fleet test: redis-server is missing (apt-get install -y redis-server)');
}

/** Distinct, unlikely strings, so that any leak is found and named. */
const SECRETS = {
  broker: 'BrokerPw7Qx2',
  backend: 'BackendPw4Kd9',
  auth: 'DashAuthPw3Lm8',
  transport: 'SentinelPw5Rt1',
  otel: 'OtelToken6Wz4',
  dead: 'DeadBrokerPw2Hs7',
} as const;
/** Each secret and the forms it could leak in: as is, URL-encoded, and the basic-auth header's base64. */
const FORMS: Array<[name: string, form: string]> = [
  ...Object.entries(SECRETS).flatMap(([name, secret]): Array<[string, string]> => [[name, secret], [`${name} (URL-encoded)`, encodeURIComponent(`:${secret}@`)]]),
  ['auth (basic-auth header)', Buffer.from(`admin:${SECRETS.auth}`).toString('base64')],
];

/** The outputs searched, by where they came from. */
const outputs = new Map<string, string>();
const record = (where: string, text: string): void => void outputs.set(where, `${outputs.get(where) ?? ''}${text}`);

const port = 19_000 + Math.floor(Math.random() * 1000);
const workerHttpPort = port + 1000;
const dir = mkdtempSync(join(tmpdir(), 'kq-no-secrets-'));
const broker = `redis://:${SECRETS.broker}@127.0.0.1:${port}/0`;
const backend = `redis://kqresults:${SECRETS.backend}@127.0.0.1:${port}/1`;
const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  NO_COLOR: '1',
  KQ_BROKER_URL: broker,
  KQ_RESULT_BACKEND: backend,
  KQ_DASHBOARD_AUTH: `admin:${SECRETS.auth}`,
  KQ_SECRETS_TRANSPORT_PASSWORD: SECRETS.transport,
  KQ_SECRETS_DEAD_BROKER: `redis://:${SECRETS.dead}@127.0.0.1:1/0`,
  OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer ${SECRETS.otel}`,
};
const authorization = `Basic ${Buffer.from(`admin:${SECRETS.auth}`).toString('base64')}`;

/** A long-running `kq …`, its output recorded under `name`. */
function start(name: string, args: string[]): ChildProcess {
  const child = spawn(process.execPath, [kqBin, '-A', appModule, ...args], { cwd: repoRoot, env });
  child.stdout?.on('data', (chunk: Buffer) => record(`${name} stdout`, chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => record(`${name} stderr`, chunk.toString()));
  return child;
}

/** A one-shot `kq …`, recorded; resolves to its stdout. */
function run(args: string[]): Promise<string> {
  return new Promise((resolve) => {
    const child = start(`kq ${args.join(' ')}`, args);
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await closed;
  clearTimeout(timer);
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function redisAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(/^(\+PONG|-NOAUTH)/.test(data.toString())); // it needs the password: it is up
    });
    socket.once('error', () => resolve(false));
  });
}

describe.skipIf(!haveRedisServer)('no output of a fleet holds a secret', () => {
  let redis: ChildProcess | undefined;
  let worker: ChildProcess | undefined;
  let dashboard: ChildProcess | undefined;
  let dashboardUrl = '';
  let app: App;

  beforeAll(async () => {
    redis = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--requirepass', SECRETS.broker, '--user', 'kqresults', 'on', `>${SECRETS.backend}`, '~*', '&*', '+@all'],
      { stdio: 'ignore' },
    );
    await until('the private redis-server', async () => ((await redisAnswers()) ? true : undefined), 10_000);
    worker = start('kq worker', ['worker', '-E', '-n', 'secrets@fleet', '-c', '2', '-l', 'debug', '-f', join(dir, 'worker.log'), '--http-port', String(workerHttpPort), '-S', join(dir, 'worker.state')]);
    dashboard = start('kq dashboard', ['dashboard', '--port', '0', '--state-file', join(dir, 'dashboard.json')]);
    dashboardUrl = await until('the dashboard URL', () => /kq dashboard on (http:\/\/\S+)/.exec(outputs.get('kq dashboard stdout') ?? '')?.[1]);
    app = new App('secrets-client', { broker, backend });
    await until('the worker', async () => ((await app.control.ping({ timeout: 500 })).length > 0 ? true : undefined));
  }, 90_000);

  afterAll(async () => {
    await app?.close();
    await stop(dashboard);
    await stop(worker);
    redis?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('every output, searched for every secret, holds none', async () => {
    // The fleet at work: a task that succeeds, one that fails, one that fails reaching a broker with a password.
    const added = await app.sendTask('secrets.add', [2, 3]);
    expect(await added.get({ timeout: 20_000 })).toBe(5);
    const failed = await app.sendTask('secrets.boom');
    const unreachable = await app.sendTask('secrets.unreachable');
    for (const result of [failed, unreachable]) await expect(result.get({ timeout: 30_000 })).rejects.toThrow();
    await expect(unreachable.get({ timeout: 1000 })).rejects.toThrow(/Cannot connect to redis:\/\/:\*\*@127\.0\.0\.1:1\/0/);

    // The dashboard sees them; then every page and reply, as the signed-in user, and the refusals.
    const fetchText = async (path: string, init: RequestInit = {}): Promise<string> => {
      const response = await fetch(`${dashboardUrl}${path}`, { ...init, headers: { authorization, ...(init.headers as Record<string, string> | undefined) } });
      const text = `${response.status} ${JSON.stringify(Object.fromEntries(response.headers))}\n${await response.text()}`;
      record(`dashboard ${init.method ?? 'GET'} ${path}`, text);
      return text;
    };
    await until('the failed task on the dashboard', async () => ((await fetchText(`/api/task/info/${unreachable.id}`)).startsWith('200') && (await fetchText(`/api/task/info/${unreachable.id}`)).includes('FAILURE') ? true : undefined));
    await until('the worker inspected by the dashboard', async () => ((await fetchText('/api/workers?refresh=1')).includes('transport_options') ? true : undefined));
    const host = encodeURIComponent('secrets@fleet');
    for (const path of ['/', '/workers', `/worker/${host}`, '/tasks', `/task/${failed.id}`, '/broker', '/queues', '/dead-letters', '/static/app.js']) await fetchText(path);
    for (const path of [
      '/api/workers',
      `/api/workers?workername=${host}`,
      '/api/workers?status=1',
      '/api/tasks',
      '/api/task/types',
      `/api/task/info/${failed.id}`,
      `/api/task/result/${failed.id}`,
      `/api/task/result/${unreachable.id}`,
      `/api/task/result/${added.id}`,
      '/api/queues/length',
      '/metrics',
      '/healthcheck',
      '/dashboard/overview',
      `/dashboard/task/${failed.id}/resend`,
      '/dashboard/dead-letters',
    ]) {
      await fetchText(path);
    }
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    await fetchText(`/api/task/rate-limit/secrets.add`, { method: 'POST', headers: form, body: `workername=${host}&ratelimit=100/s` });
    await fetchText(`/api/worker/pool/grow/${host}`, { method: 'POST', headers: form, body: 'n=1' });
    await fetchText(`/api/task/async-apply/secrets.add`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ args: [1, 2] }) });
    await fetchText(`/api/task/revoke/${failed.id}`, { method: 'POST' });
    // refusals: wrong credentials, none, and a cross-site action
    record('dashboard without credentials', await (await fetch(`${dashboardUrl}/api/workers`)).text());
    record('dashboard with a wrong password', await (await fetch(`${dashboardUrl}/api/workers`, { headers: { authorization: `Basic ${Buffer.from('admin:nope').toString('base64')}` } })).text());
    await fetchText(`/api/task/revoke/${failed.id}`, { method: 'POST', headers: { origin: 'https://evil.example' } });
    // the worker's own HTTP endpoints
    for (const path of ['/metrics', '/healthz', '/readyz']) record(`worker GET ${path}`, await (await fetch(`http://127.0.0.1:${workerHttpPort}${path}`)).text());

    // The command line: what a person runs on the fleet.
    // Addressed to the one worker, a remote command ends with its reply instead of waiting out the timeout.
    const toWorker = ['-t', '10', '-d', 'secrets@fleet'];
    const inspected = await run(['inspect', 'stats', ...toWorker, '-j']);
    expect(inspected).toContain('transport_options'); // the worker answered: there is something to search
    const commands = [['report'], ['inspect', 'conf', ...toWorker], ['inspect', 'report', ...toWorker], ['inspect', 'active_queues', ...toWorker], ['status', ...toWorker], ['result', failed.id], ['result', unreachable.id], ['dlq', 'list'], ['call', 'secrets.add', '-a', '[3, 4]', '--wait']];
    // three at a time: each loads the app through tsx
    for (let i = 0; i < commands.length; i += 3) await Promise.all(commands.slice(i, i + 3).map(run));
    expect(outputs.get('kq report stdout')).toContain("broker_url: 'redis://:********@127.0.0.1");

    // Everything stops (the dashboard writes its state file, the worker its state db), then files are read too.
    await stop(dashboard);
    await stop(worker);
    for (const file of ['worker.log', 'dashboard.json']) record(file, readFileSync(join(dir, file), 'utf8'));

    expect(outputs.get('worker.log')).toMatch(/DEBUG/); // the worker logged at debug level: the most it says
    expect(outputs.get(`dashboard GET /api/workers?workername=${host}`)).toContain('sentinel_kwargs');
    const leaks = [...outputs].flatMap(([where, text]) => FORMS.filter(([, form]) => text.includes(form)).map(([name]) => `${name} in ${where}`));
    expect(leaks).toEqual([]);
    expect(outputs.size).toBeGreaterThan(40);
  }, 240_000);
});
