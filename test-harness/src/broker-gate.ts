import { connect } from 'node:net';

export type BrokerKind = 'redis' | 'amqp' | 'postgres';

const DEFAULT_PORTS: Record<BrokerKind, number> = { redis: 6379, amqp: 5672, postgres: 5432 };

/** The broker URLs tests use: `KQ_REDIS_URL` / `KQ_AMQP_URL` / `KQ_POSTGRES_URL`, else the local defaults. */
export const brokerUrls = {
  redis: process.env['KQ_REDIS_URL'] ?? 'redis://127.0.0.1:6379',
  amqp: process.env['KQ_AMQP_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672',
  postgres: process.env['KQ_POSTGRES_URL'] ?? 'postgresql://postgres@127.0.0.1:5432/test',
} as const;

/**
 * Decides whether a broker-backed suite runs. Reachable → true. Unreachable → with `KQ_REQUIRE_BROKERS=1` (CI) it
 * throws, so a missing broker fails the run; otherwise it prints one line saying why and returns false, so the
 * suite is skipped: `describe.skipIf(!(await brokerReachable('redis')))(...)`.
 */
export async function brokerReachable(kind: BrokerKind, url: string = brokerUrls[kind]): Promise<boolean> {
  const { hostname, port } = new URL(url);
  const host = hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  const error = await probe(host, port ? Number(port) : DEFAULT_PORTS[kind]);
  if (!error) return true;
  const why = `${kind} is not reachable at ${host}:${port || DEFAULT_PORTS[kind]} (${error})`;
  if (process.env['KQ_REQUIRE_BROKERS'] === '1') {
    throw new Error(`${why}; KQ_REQUIRE_BROKERS=1 makes this a failure. Start the broker and run again.`);
  }
  console.warn(`[kq] skipping ${kind} tests: ${why}. Start it, or set KQ_REQUIRE_BROKERS=1 to fail instead.`);
  return false;
}

function probe(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 1500 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('timed out');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** The Python interpreter interop tests drive: Debian's, with python3-celery / python3-kombu installed. */
export const pythonInterpreter = process.env['KQ_PYTHON'] ?? '/usr/bin/python3';

/**
 * Decides whether interop tests against real Python Kombu/Celery run: true when `modules` import in
 * `pythonInterpreter`; otherwise one line saying why and false — or, with `KQ_REQUIRE_BROKERS=1`, a failure.
 */
export async function pythonAvailable(modules: readonly string[] = ['kombu', 'celery']): Promise<boolean> {
  const { execFile } = await import('node:child_process');
  const error = await new Promise<string | undefined>((resolve) => {
    execFile(pythonInterpreter, ['-c', `import ${modules.join(', ')}`], { timeout: 20_000 }, (failure, _stdout, stderr) =>
      resolve(failure ? (stderr.trim().split('\n').pop() ?? failure.message) : undefined),
    );
  });
  if (!error) return true;
  const why = `${pythonInterpreter} cannot import ${modules.join(', ')} (${error})`;
  if (process.env['KQ_REQUIRE_BROKERS'] === '1') {
    throw new Error(`${why}; KQ_REQUIRE_BROKERS=1 makes this a failure. Install: apt-get install -y python3-celery python3-redis`);
  }
  console.warn(`[kq] skipping Python interop tests: ${why}. Install with: apt-get install -y python3-celery python3-redis`);
  return false;
}

/**
 * Decides whether tests that start private servers of their own (TLS, ACLs) run: true when `command` (e.g.
 * `redis-server --version`) runs; otherwise one line saying why and false — or, with `KQ_REQUIRE_BROKERS=1`, a failure.
 */
export async function serverAvailable(command: readonly [string, ...string[]], purpose: string): Promise<boolean> {
  const { execFile } = await import('node:child_process');
  const [binary, ...args] = command;
  const error = await new Promise<string | undefined>((resolve) => {
    execFile(binary, args, { timeout: 20_000 }, (failure) => resolve(failure ? failure.message.split('\n')[0] : undefined));
  });
  if (!error) return true;
  const why = `${binary} cannot run (${error})`;
  if (process.env['KQ_REQUIRE_BROKERS'] === '1') throw new Error(`${why}; KQ_REQUIRE_BROKERS=1 makes this a failure. Install it for ${purpose}.`);
  console.warn(`[kq] skipping ${purpose}: ${why}.`);
  return false;
}
