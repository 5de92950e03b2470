import { setTimeout as sleep } from 'node:timers/promises';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where private clusters go: client ports 17000–17099, so cluster bus ports (client + 10000) are 27000–27099. */
export const REDIS_CLUSTER_PORTS = { first: 17_000, last: 17_099 } as const;
/** Redis Cluster talks node to node on the client port + this. */
const BUS_OFFSET = 10_000;

export interface RedisClusterOptions {
  /** Masters (no replicas). Default 3, the smallest cluster Redis accepts. */
  masters?: number;
  /** First client port; default: a free run of ports in 17000–17099. */
  port?: number;
  /**
   * Keep data across a kill (append-only file fsynced on every write, for restart faults). Default false: no
   * persistence at all, as tests want.
   */
  persistent?: boolean;
}

/**
 * A Redis Cluster of its own (redis-server 7 processes on 127.0.0.1, every slot assigned, no replicas), for tests, the
 * fault suite and the benchmark — never the shared server. Each node has its own directory under one temp dir, removed
 * by `destroy()`; the processes are also killed if this process exits without it.
 */
export class RedisClusterProcesses {
  readonly ports: readonly number[];
  readonly dir = mkdtempSync(join(tmpdir(), 'kq-redis-cluster-'));
  readonly #persistent: boolean;
  readonly #servers = new Map<number, ChildProcess>();
  readonly #onExit = (): void => this.#killAllNow();
  /** Set once the nodes were made one cluster (their nodes.conf remembers it across restarts). */
  #created = false;
  #exitHooked = false;
  /** Why a server could not even be spawned (no redis-server on the PATH). */
  #spawnError: Error | undefined;

  constructor(options: RedisClusterOptions & { port: number }) {
    const masters = options.masters ?? 3;
    this.ports = Array.from({ length: masters }, (_, index) => options.port + index);
    this.#persistent = options.persistent ?? false;
  }

  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,…/`: what kq's Redis transport takes for a cluster. */
  get url(): string {
    return `redis+cluster://${this.ports.map((port) => `127.0.0.1:${port}`).join(',')}/`;
  }

  get nodes(): Array<{ host: string; port: number }> {
    return this.ports.map((port) => ({ host: '127.0.0.1', port }));
  }

  /** Starts every node and, the first time, makes them one cluster; resolves once it serves every slot. */
  async start(): Promise<void> {
    if (!this.#exitHooked) process.once('exit', this.#onExit);
    this.#exitHooked = true;
    const fresh = this.#servers.size === 0 && !this.#created;
    for (const port of this.ports) this.#startServer(port);
    for (const port of this.ports) {
      await waitUntil(
        () => {
          if (this.#spawnError) throw this.#spawnError;
          return this.cli(port, 'PING').then((out) => out === 'PONG', () => false);
        },
        15_000,
        `redis-server on ${port}`,
      );
    }
    if (fresh) {
      await run('redis-cli', ['--cluster', 'create', ...this.ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'], {
        timeout: 30_000,
      });
      this.#created = true;
    }
    await this.waitHealthy();
  }

  /** Resolves once every running node says the cluster is ok (every slot served). */
  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    for (const port of this.#servers.keys()) {
      await waitUntil(
        () => this.cli(port, 'CLUSTER', 'INFO').then((out) => out.includes('cluster_state:ok'), () => false),
        timeoutMs,
        `the cluster node on ${port} to report cluster_state:ok`,
      );
    }
  }

  /** Runs redis-cli against one node; resolves to its output, trimmed. */
  async cli(port: number, ...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 5000 });
    return stdout.trim();
  }

  /** The client port of the master serving `slot`. */
  async portOfSlot(slot: number): Promise<number> {
    // CLUSTER NODES: one line per node, `<id> <ip:port@bus> <flags> … <slot ranges>` (the ranges from the ninth field).
    const nodes = await this.cli(this.ports[0] as number, 'CLUSTER', 'NODES');
    for (const line of nodes.split('\n')) {
      const fields = line.split(' ');
      const port = Number(/:(\d+)@/.exec(fields[1] ?? '')?.[1]);
      for (const range of fields.slice(8)) {
        const [low, high = low] = range.split('-').map(Number);
        if (low !== undefined && high !== undefined && slot >= low && slot <= high) return port;
      }
    }
    throw new Error(`no node of the cluster on ${this.ports.join(',')} serves slot ${slot}`);
  }

  /**
   * Moves one slot, keys and all, to the master on `toPort` while clients go on using it: Redis's own resharding steps
   * (what `redis-cli --cluster reshard` does for each slot) — IMPORTING on the target, MIGRATING on the source, MIGRATE
   * a few keys at a time (`pauseMs` apart, so clients meet the slot half moved), then SETSLOT NODE on every master.
   * Resolves to how many keys moved.
   */
  async migrateSlot(slot: number, toPort: number, options: { batch?: number; pauseMs?: number } = {}): Promise<number> {
    const fromPort = await this.portOfSlot(slot);
    if (fromPort === toPort) return 0;
    const [fromId, toId] = await Promise.all([this.cli(fromPort, 'CLUSTER', 'MYID'), this.cli(toPort, 'CLUSTER', 'MYID')]);
    await this.cli(toPort, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId);
    await this.cli(fromPort, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId);
    let moved = 0;
    for (;;) {
      const listed = await this.cli(fromPort, 'CLUSTER', 'GETKEYSINSLOT', String(slot), String(options.batch ?? 5));
      const keys = listed.split('\n').filter((key) => key !== '');
      if (keys.length === 0) break;
      await this.cli(fromPort, 'MIGRATE', '127.0.0.1', String(toPort), '', '0', '5000', 'KEYS', ...keys);
      moved += keys.length;
      if (options.pauseMs) await sleep(options.pauseMs);
    }
    // The target first, then the source, then the others: the order redis-cli uses, so no node sends clients back.
    const others = this.ports.filter((port) => port !== fromPort && port !== toPort);
    for (const port of [toPort, fromPort, ...others]) await this.cli(port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', toId);
    return moved;
  }

  /** Kills every node outright (SIGKILL); with `persistent`, a later `start()` brings them back with their data. */
  async kill(): Promise<void> {
    await Promise.all([...this.#servers.keys()].map((port) => this.killNode(port)));
  }

  /** Kills one node outright (SIGKILL). */
  async killNode(port: number): Promise<void> {
    const child = this.#servers.get(port);
    this.#servers.delete(port);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  /** Stops every node being scheduled (SIGSTOP): connections stay open, nothing answers. */
  pause(): void {
    for (const child of this.#servers.values()) child.kill('SIGSTOP');
  }

  resume(): void {
    for (const child of this.#servers.values()) child.kill('SIGCONT');
  }

  /** Drops every client connection on every node; resolves to how many. */
  async killConnections(): Promise<number> {
    let killed = 0;
    for (const port of this.#servers.keys()) killed += Number(await this.cli(port, 'CLIENT', 'KILL', 'TYPE', 'normal'));
    return killed;
  }

  /** Kills every node and removes their data. */
  async destroy(): Promise<void> {
    this.resume();
    await this.kill();
    process.removeListener('exit', this.#onExit);
    this.#exitHooked = false;
    rmSync(this.dir, { recursive: true, force: true });
  }

  #startServer(port: number): void {
    const dir = join(this.dir, String(port));
    mkdirSync(dir, { recursive: true });
    const persistence = this.#persistent ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
    const args = [
      '--port', String(port),
      '--bind', '127.0.0.1',
      '--cluster-enabled', 'yes',
      '--cluster-config-file', join(dir, 'nodes.conf'),
      // A node that comes back after a kill rejoins within a second or two.
      '--cluster-node-timeout', '2000',
      '--dir', dir,
      '--save', '',
      ...persistence,
    ];
    const child = spawn('redis-server', args, { stdio: 'ignore' });
    child.once('error', (error) => (this.#spawnError = new Error(`cannot run redis-server: ${error.message}`)));
    this.#servers.set(port, child);
  }

  /** On the way out of a process that did not destroy the cluster: no orphaned servers, no leftover directory. */
  #killAllNow(): void {
    for (const child of this.#servers.values()) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Starts a private cluster on free ports in 17000–17099 (each client port and its bus port checked), trying another
 * range when a port is taken between the check and the start.
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisClusterProcesses> {
  const masters = options.masters ?? 3;
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = options.port ?? (await freePortRun(masters));
    const cluster = new RedisClusterProcesses({ ...options, port });
    try {
      await cluster.start();
      return cluster;
    } catch (error) {
      lastError = error;
      await cluster.destroy().catch(() => undefined);
      // Another range helps when a port was taken meanwhile, not when there is no redis-server to run.
      if (options.port !== undefined || (error instanceof Error && error.message.startsWith('cannot run redis-server'))) break;
    }
  }
  throw lastError instanceof Error ? lastError : new Error(String(lastError));
}

/**
 * Decides whether cluster tests run, as `brokerReachable` does for the shared brokers: a started cluster, or — when
 * it cannot start — undefined after one line saying why; with `KQ_REQUIRE_BROKERS=1` (CI) the failure is thrown.
 */
export async function startRedisClusterOrSkip(options: RedisClusterOptions = {}): Promise<RedisClusterProcesses | undefined> {
  try {
    return await startRedisCluster(options);
  } catch (error) {
    const why = `a private Redis Cluster could not start (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
    if (process.env['KQ_REQUIRE_BROKERS'] === '1') throw new Error(`${why}; KQ_REQUIRE_BROKERS=1 makes this a failure. Install redis-server 7.`);
    console.warn(`[kq] skipping Redis Cluster tests: ${why}. Install redis-server 7, or set KQ_REQUIRE_BROKERS=1 to fail instead.`);
    return undefined;
  }
}

/** A first port of `count` consecutive free client ports (and their bus ports) in the cluster range. */
async function freePortRun(count: number): Promise<number> {
  const { first, last } = REDIS_CLUSTER_PORTS;
  const starts = Array.from({ length: last - first - count + 2 }, (_, index) => first + index);
  // A random start first, so test files running side by side rarely try the same ports.
  for (let tried = 0; tried < 40; tried++) {
    const start = starts[Math.floor(Math.random() * starts.length)] as number;
    const ports = Array.from({ length: count }, (_, index) => start + index);
    const free = await Promise.all(ports.flatMap((port) => [portFree(port), portFree(port + BUS_OFFSET)]));
    if (free.every(Boolean)) return start;
  }
  throw new Error(`no ${count} consecutive free ports (and bus ports + ${BUS_OFFSET}) in ${first}–${last}`);
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}
