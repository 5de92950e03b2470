import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitUntil, type BrokerNode } from './broker-node';

const run = promisify(execFile);

/**
 * A RabbitMQ node of the suite's own: its own node name, AMQP and distribution ports, config, data and log
 * directories (Debian's wrapper runs the server as the `rabbitmq` user, so they belong to it). Durable queues and
 * persistent messages survive its restart.
 */
export class RabbitNode implements BrokerNode {
  readonly kind = 'amqp' as const;
  readonly port: number;
  readonly nodeName: string;
  readonly dir = mkdtempSync(join(tmpdir(), 'kq-faults-rabbit-'));
  #process: ChildProcess | undefined;

  constructor(port: number) {
    this.port = port;
    this.nodeName = `kqfaults${port}@localhost`;
    writeFileSync(join(this.dir, 'rabbitmq.conf'), `listeners.tcp.local = 127.0.0.1:${port}\nloopback_users = none\n`);
    writeFileSync(join(this.dir, 'env.conf'), `NODENAME=${this.nodeName}\nERL_EPMD_ADDRESS=127.0.0.1\n`);
    writeFileSync(join(this.dir, 'enabled_plugins'), '[].\n');
    try {
      const { uid, gid } = rabbitUser();
      chownSync(this.dir, uid, gid);
      for (const file of ['rabbitmq.conf', 'env.conf', 'enabled_plugins']) chownSync(join(this.dir, file), uid, gid);
    } catch {
      // Not root, or no rabbitmq user: the server runs as this user then, and can write here.
    }
  }

  get url(): string {
    return `amqp://guest:guest@127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.#process = spawn('rabbitmq-server', [], {
      stdio: 'ignore',
      env: {
        ...process.env,
        RABBITMQ_CONF_ENV_FILE: join(this.dir, 'env.conf'),
        RABBITMQ_CONFIG_FILE: join(this.dir, 'rabbitmq.conf'),
        RABBITMQ_NODENAME: this.nodeName,
        RABBITMQ_DIST_PORT: String(this.port + 10_000),
        RABBITMQ_MNESIA_BASE: join(this.dir, 'mnesia'),
        RABBITMQ_LOG_BASE: join(this.dir, 'log'),
        RABBITMQ_ENABLED_PLUGINS_FILE: join(this.dir, 'enabled_plugins'),
        RABBITMQ_PID_FILE: join(this.dir, 'pid'),
        ERL_FLAGS: '-kernel inet_dist_use_interface {127,0,0,1}',
      },
    });
    await waitUntil(() => this.ctl('await_startup', '--timeout', '2').then(() => true, () => false), 180_000, `RabbitMQ node ${this.nodeName}`);
  }

  async kill(): Promise<void> {
    const pid = this.#pid();
    if (pid !== undefined) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    const child = this.#process;
    this.#process = undefined;
    if (child && child.exitCode === null) await new Promise<void>((resolve) => child.once('exit', () => resolve()));
    await waitUntil(() => this.ctl('ping').then(() => false, () => true), 30_000, `${this.nodeName} to go`);
  }

  pause(): void {
    const pid = this.#pid();
    if (pid !== undefined) process.kill(pid, 'SIGSTOP');
  }

  resume(): void {
    const pid = this.#pid();
    if (pid !== undefined) process.kill(pid, 'SIGCONT');
  }

  async killConnections(): Promise<number> {
    const listing = await this.ctl('list_connections', 'pid');
    const pids = listing.split('\n').map((line) => line.trim()).filter((line) => line.startsWith('<'));
    for (const pid of pids) await this.ctl('close_connection', pid, 'kq fault suite');
    return pids.length;
  }

  async destroy(): Promise<void> {
    try {
      this.resume();
      await this.ctl('stop');
    } catch {
      await this.kill().catch(() => undefined);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The Erlang VM's pid (the wrapper's child), from the pid file the server writes. */
  #pid(): number | undefined {
    try {
      const pid = Number(readFileSync(join(this.dir, 'pid'), 'utf8').trim());
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  /** Runs `rabbitmqctl` against this node. */
  async ctl(...args: string[]): Promise<string> {
    const { stdout } = await run('rabbitmqctl', ['-q', '-n', this.nodeName, ...args], { timeout: 30_000 });
    return stdout;
  }
}

function rabbitUser(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((entry) => entry.startsWith('rabbitmq:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) throw new Error('no rabbitmq user');
  return { uid: Number(uid), gid: Number(gid) };
}
