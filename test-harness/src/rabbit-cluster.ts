import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import type { CertificateFiles } from './test-certificates';
import { waitFor } from './wait-for';

const run = promisify(execFile);

export interface RabbitNodeOptions {
  /**
   * A TLS listener on the AMQP port + 1 (so take two ports from `freeRabbitPorts(2)`) with this certificate; `ca` is
   * the CA client certificates must be signed by, and with `requireClientCertificate` a client without one is refused.
   */
  tls?: { server: CertificateFiles; ca: string; requireClientCertificate?: boolean };
}

/**
 * A private RabbitMQ node (for tests and the fault suite, never the shared broker): its own node name, AMQP and
 * distribution ports (AMQP + 10000), config, data and log directories (Debian's wrapper runs the server as the
 * `rabbitmq` user, so they belong to it). Durable queues and persistent messages survive its restart.
 */
export class RabbitNode {
  readonly kind = 'amqp' as const;
  readonly port: number;
  readonly nodeName: string;
  readonly dir = mkdtempSync(join(tmpdir(), 'kq-rabbit-'));
  #process: ChildProcess | undefined;

  constructor(port: number, options: RabbitNodeOptions = {}) {
    this.port = port;
    this.nodeName = `kqtest${port}@localhost`;
    const config = [`listeners.tcp.local = 127.0.0.1:${port}`, 'loopback_users = none'];
    const files = ['rabbitmq.conf', 'env.conf', 'enabled_plugins'];
    const { tls } = options;
    if (tls) {
      // Copies in the node's directory: the server runs as the rabbitmq user, who cannot read a test's temporary folder.
      for (const [name, source] of [['ca.pem', tls.ca], ['server.pem', tls.server.cert], ['server.key', tls.server.key]] as const) {
        copyFileSync(source, join(this.dir, name));
        files.push(name);
      }
      config.push(
        `listeners.ssl.local = 127.0.0.1:${port + 1}`,
        `ssl_options.cacertfile = ${join(this.dir, 'ca.pem')}`,
        `ssl_options.certfile = ${join(this.dir, 'server.pem')}`,
        `ssl_options.keyfile = ${join(this.dir, 'server.key')}`,
        'ssl_options.verify = verify_peer',
        `ssl_options.fail_if_no_peer_cert = ${tls.requireClientCertificate ? 'true' : 'false'}`,
      );
    }
    writeFileSync(join(this.dir, 'rabbitmq.conf'), `${config.join('\n')}\n`);
    writeFileSync(join(this.dir, 'env.conf'), `NODENAME=${this.nodeName}\nERL_EPMD_ADDRESS=127.0.0.1\n`);
    writeFileSync(join(this.dir, 'enabled_plugins'), '[].\n');
    try {
      const { uid, gid } = rabbitUser();
      chownSync(this.dir, uid, gid);
      for (const file of files) chownSync(join(this.dir, file), uid, gid);
    } catch {
      // Not root, or no rabbitmq user: the server runs as this user then, and can write here.
    }
  }

  get url(): string {
    return `amqp://guest:guest@127.0.0.1:${this.port}`;
  }

  /** The TLS listener's URL (a node made with the `tls` option): `amqps://guest:guest@127.0.0.1:<port + 1>`. */
  get tlsUrl(): string {
    return `amqps://guest:guest@127.0.0.1:${this.port + 1}`;
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
    await waitFor(() => this.ctl('await_startup', '--timeout', '2').then(() => true, () => false), 180_000, `RabbitMQ node ${this.nodeName}`);
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
    await waitFor(() => this.ctl('ping').then(() => false, () => true), 30_000, `${this.nodeName} to go`);
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

/**
 * A private three-node RabbitMQ cluster (three private nodes, joined to the first), used with quorum queues:
 * the task queue keeps its messages on a majority of nodes, so losing one node loses nothing. Workers and producers
 * get all three nodes in their URL (Kombu's broker list) and fail over between them. `failover()` kills the node that
 * leads the task queue, as RabbitMQ reports it (not assumed): losing the leader is the case that forces a leader
 * election as well as the clients' reconnect.
 */
interface QueueListing {
  name: string;
  type: string;
  leader?: string;
  messages?: number;
}

export class RabbitCluster {
  readonly kind = 'rabbit-cluster' as const;
  readonly nodes: readonly RabbitNode[];
  readonly queueArguments = { 'x-queue-type': 'quorum' };
  #killed = new Set<RabbitNode>();

  constructor(port: number) {
    this.nodes = [0, 1, 2].map((offset) => new RabbitNode(port + offset));
  }

  get url(): string {
    return this.nodes.map((node) => node.url).join(';');
  }

  async start(): Promise<void> {
    const [first, ...rest] = this.nodes as [RabbitNode, ...RabbitNode[]];
    await Promise.all(this.nodes.map((node) => node.start()));
    for (const node of rest) {
      await node.ctl('stop_app');
      await node.ctl('join_cluster', first.nodeName);
      await node.ctl('start_app');
    }
    await waitFor(
      () => first.ctl('cluster_status', '--formatter', 'json').then((out) => (JSON.parse(out) as { running_nodes?: string[] }).running_nodes?.length === 3, () => false),
      60_000,
      'the three RabbitMQ nodes to form a cluster',
    );
  }

  /**
   * The node RabbitMQ names as leader of quorum queue `name`, or (no name) of the quorum queue holding the most
   * messages: the task queue mid-drain.
   */
  async queueLeader(name?: string): Promise<RabbitNode> {
    const live = this.nodes.find((node) => !this.#killed.has(node)) as RabbitNode;
    const listing = JSON.parse(await live.ctl('list_queues', 'name', 'type', 'leader', 'messages', '--formatter', 'json')) as QueueListing[];
    const quorum = listing.filter((queue) => queue.type === 'quorum' && (name === undefined || queue.name === name));
    const chosen = quorum.sort((a, b) => (b.messages ?? 0) - (a.messages ?? 0))[0];
    const leader = this.nodes.find((node) => node.nodeName === chosen?.leader);
    if (!leader) throw new Error(`no quorum queue${name ? ` ${name}` : ''} with a known leader on the cluster (rabbitmqctl listed ${JSON.stringify(listing)})`);
    return leader;
  }

  /** Kills one node outright (SIGKILL); the others carry on. */
  async killNode(node: RabbitNode): Promise<void> {
    this.#killed.add(node);
    await node.kill();
  }

  /** Starts a killed node again, on its own data: it rejoins the cluster (and its quorum queues catch up). */
  async restartNode(node: RabbitNode): Promise<void> {
    await node.start();
    this.#killed.delete(node);
    const first = this.#live()[0] as RabbitNode;
    await waitFor(
      () => first.ctl('cluster_status', '--formatter', 'json').then((out) => (JSON.parse(out) as { running_nodes?: string[] }).running_nodes?.length === 3, () => false),
      60_000,
      `${node.nodeName} to rejoin the cluster`,
    );
  }

  /**
   * Kills the task queue's leader outright (SIGKILL); the other two elect a new leader from their copies and the
   * clients connected to it fail over. The clients connect to the first node first and declare the queue there, so
   * this is usually the first node; which node it was is logged.
   */
  async failover(): Promise<void> {
    const leader = await this.queueLeader();
    console.log(`  killing ${leader.nodeName}, the task queue's leader${leader === this.nodes[0] ? ' and the clients\' first node' : ''}`);
    await this.killNode(leader);
  }

  async kill(): Promise<void> {
    await this.failover();
  }

  pause(): void {
    for (const node of this.#live()) node.pause();
  }

  resume(): void {
    for (const node of this.#live()) node.resume();
  }

  async killConnections(): Promise<number> {
    let closed = 0;
    for (const node of this.#live()) closed += await node.killConnections();
    return closed;
  }

  async destroy(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.destroy().catch(() => undefined)));
  }

  #live(): RabbitNode[] {
    return this.nodes.filter((node) => !this.#killed.has(node));
  }
}

/**
 * A free run of `count` AMQP ports in [first, last] whose distribution ports (+10000) are free too, so private nodes
 * of parallel runs (tests, the fault suite) never collide with each other or with the shared broker.
 */
export async function freeRabbitPorts(count: number, first = 15_600, last = 15_799): Promise<number> {
  const starts = Array.from({ length: Math.floor((last - first + 1) / count) }, (_, i) => first + i * count).sort(() => Math.random() - 0.5);
  for (const start of starts) {
    const ports = Array.from({ length: count }, (_, i) => start + i);
    const free = await Promise.all([...ports, ...ports.map((port) => port + 10_000)].map(portIsFree));
    if (free.every(Boolean)) return start;
  }
  throw new Error(`no ${count} free RabbitMQ ports in ${first}-${last}`);
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
