import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { PrivateRedisServer } from '@kq/test-harness/private-redis-server';
import type { BrokerKind, CeleryVersion } from './celery-versions';
import type { WorkerKind } from './worker-kind';

const run = promisify(execFile);

/**
 * What one run (a version × broker × worker) has to itself, so runs can go at once: a private Redis server (the
 * result backend in database 0, where upstream's tests read keys with their own connection and count the server's
 * pub/sub channels; with a Redis broker, the broker in database 1) and, with RabbitMQ, a vhost of the shared server.
 */
export interface RunIsolation {
  readonly redisPort: number;
  /** The broker URL as kq spells it (`redis://`, `amqp://`). */
  readonly brokerUrl: string;
  /** The same broker as Kombu spells it (`pyamqp://` for RabbitMQ). */
  readonly pythonBrokerUrl: string;
  readonly backendUrl: string;
  /** Celery settings the client, the Python worker and the kq worker all take (RabbitMQ's quorum settings). */
  readonly celeryConfig: Readonly<Record<string, unknown>>;
  /** The vhost made for the run, deleted by `close()`. */
  readonly vhost: string | undefined;
  close(): Promise<void>;
}

/**
 * Celery 5.5+ on RabbitMQ: quorum queues, a topic default exchange and publisher confirms, which together turn on
 * the native delayed-delivery ladder (with a direct exchange the worker holds ETA tasks in memory instead).
 */
export const QUORUM_SETTINGS: Readonly<Record<string, unknown>> = {
  task_default_queue_type: 'quorum',
  task_default_exchange_type: 'topic',
  broker_transport_options: { confirm_publish: true },
};

/** The run's vhost: the runner's pid in it, so two runners at once (a full run, a kq rerun) never share one. */
export function vhostName(celery: CeleryVersion, worker: WorkerKind, pid: number = process.pid): string {
  return `kq-suite-${celery.version}-${worker}-${pid}`;
}

/** Deletes the vhosts of runners that are gone (killed before they could), never one of a runner still running. */
async function deleteAbandonedVhosts(): Promise<void> {
  const listed = await rabbitmqctlOutput('list_vhosts', 'name');
  for (const name of listed.split('\n').map((line) => line.trim())) {
    const pid = /^kq-suite-.+-(\d+)$/.exec(name)?.[1];
    if (pid !== undefined && !processAlive(Number(pid))) await rabbitmqctl('delete_vhost', name).catch(() => undefined);
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function isolateRun(celery: CeleryVersion, broker: BrokerKind, worker: WorkerKind): Promise<RunIsolation> {
  const redis = new PrivateRedisServer();
  await redis.start();
  const backendUrl = `${redis.url}/0`;
  if (broker === 'redis') {
    const brokerUrl = `${redis.url}/1`;
    return { redisPort: redis.port, brokerUrl, pythonBrokerUrl: brokerUrl, backendUrl, celeryConfig: {}, vhost: undefined, close: () => redis.stop() };
  }
  const vhost = vhostName(celery, worker);
  try {
    // Vhosts left by runners that were killed hold their queues; this runner's own are new.
    await deleteAbandonedVhosts().catch(() => undefined);
    await rabbitmqctl('add_vhost', vhost);
    await rabbitmqctl('set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*');
  } catch (error) {
    await redis.stop();
    throw error;
  }
  const brokerUrl = `amqp://guest:guest@127.0.0.1:5672/${encodeURIComponent(vhost)}`;
  return {
    redisPort: redis.port,
    brokerUrl,
    pythonBrokerUrl: `py${brokerUrl}`,
    backendUrl,
    celeryConfig: celery.rabbitQuorum ? QUORUM_SETTINGS : {},
    vhost,
    close: async () => {
      await Promise.all([redis.stop(), rabbitmqctl('delete_vhost', vhost).catch(() => undefined)]);
    },
  };
}

async function rabbitmqctl(...args: string[]): Promise<void> {
  await rabbitmqctlOutput(...args);
}

async function rabbitmqctlOutput(...args: string[]): Promise<string> {
  try {
    return (await run('rabbitmqctl', ['-q', ...args], { timeout: 60_000 })).stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim() ?? '';
    throw new Error(`rabbitmqctl ${args.join(' ')} failed (is RabbitMQ running on 127.0.0.1:5672?): ${stderr || String(error)}`, { cause: error });
  }
}
