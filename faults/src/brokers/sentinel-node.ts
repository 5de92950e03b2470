import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitUntil, type BrokerNode } from './broker-node';

const run = promisify(execFile);
const MASTER_NAME = 'kqfaults';

/**
 * Redis under Sentinel, of the suite's own: a master and a replica (AOF, fsync always) and three sentinels (quorum
 * 2, a master is down after 1 s), on five consecutive ports. Workers reach it by `sentinel://` URLs and follow the
 * master the sentinels name. `failover()` kills the master outright; the sentinels promote the replica.
 */
export class SentinelNode implements BrokerNode {
  readonly kind = 'sentinel' as const;
  readonly port: number;
  readonly dir = mkdtempSync(join(tmpdir(), 'kq-faults-sentinel-'));
  readonly transportOptions = { masterName: MASTER_NAME };
  readonly #servers = new Map<number, ChildProcess>();
  readonly #sentinels: ChildProcess[] = [];

  constructor(port: number) {
    this.port = port;
  }

  get url(): string {
    return [2, 3, 4].map((offset) => `sentinel://127.0.0.1:${this.port + offset}`).join(';');
  }

  async start(): Promise<void> {
    for (const [offset, replicaOf] of [[0, null], [1, this.port]] as const) {
      const port = this.port + offset;
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', this.#dataDir(port), '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''];
      if (replicaOf !== null) args.push('--replicaof', '127.0.0.1', String(replicaOf));
      this.#servers.set(port, spawn('redis-server', args, { stdio: 'ignore' }));
      await waitUntil(() => this.#cli(port, 'PING').then((out) => out === 'PONG', () => false), 15_000, `redis-server on ${port}`);
    }
    await waitUntil(
      () => this.#cli(this.port + 1, 'INFO', 'replication').then((out) => out.includes('master_link_status:up'), () => false),
      15_000,
      'the replica to sync',
    );
    for (const offset of [2, 3, 4]) {
      const port = this.port + offset;
      const config = join(this.dir, `sentinel-${port}.conf`);
      writeFileSync(
        config,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${this.dir}`,
          `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${this.port} 2`,
          `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
          `sentinel failover-timeout ${MASTER_NAME} 5000`,
          `sentinel parallel-syncs ${MASTER_NAME} 1`,
          '',
        ].join('\n'),
      );
      this.#sentinels.push(spawn('redis-server', [config, '--sentinel'], { stdio: 'ignore' }));
    }
    for (const offset of [2, 3, 4]) {
      await waitUntil(() => this.masterPort().then((port) => port === this.port, () => false), 15_000, `sentinel on ${this.port + offset}`);
    }
    // Every sentinel has met the others (quorum needs them), so a failover can be agreed.
    await waitUntil(
      () => this.#cli(this.port + 2, 'SENTINEL', 'SENTINELS', MASTER_NAME).then((out) => out.split('\n').filter((line) => line === 'name').length >= 2, () => false),
      20_000,
      'the sentinels to find each other',
    );
  }

  /** The master's port as the sentinels name it. */
  async masterPort(): Promise<number> {
    const out = await this.#cli(this.port + 2, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME);
    return Number(out.split('\n')[1]);
  }

  /** Kills the master (SIGKILL) and waits until the sentinels promoted the replica and it answers as master. */
  async failover(): Promise<void> {
    const old = await this.masterPort();
    await this.#killServer(old);
    await waitUntil(async () => (await this.masterPort().catch(() => old)) !== old, 30_000, 'the sentinels to promote the replica');
    const promoted = await this.masterPort();
    await waitUntil(() => this.#cli(promoted, 'INFO', 'replication').then((out) => out.includes('role:master'), () => false), 15_000, 'the new master');
  }

  async kill(): Promise<void> {
    await this.#killServer(await this.masterPort());
  }

  pause(): void {
    for (const child of this.#servers.values()) child.kill('SIGSTOP');
  }

  resume(): void {
    for (const child of this.#servers.values()) child.kill('SIGCONT');
  }

  async killConnections(): Promise<number> {
    return Number(await this.#cli(await this.masterPort(), 'CLIENT', 'KILL', 'TYPE', 'normal'));
  }

  async destroy(): Promise<void> {
    this.resume();
    for (const child of [...this.#servers.values(), ...this.#sentinels]) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  async #killServer(port: number): Promise<void> {
    const child = this.#servers.get(port);
    this.#servers.delete(port);
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  /** Each server's own directory: its append-only files must not meet the other's. */
  #dataDir(port: number): string {
    const dir = join(this.dir, String(port));
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  async #cli(port: number, ...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 5000 });
    return stdout.trim();
  }
}
