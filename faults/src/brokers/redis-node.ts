import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitUntil, type BrokerNode } from './broker-node';

const run = promisify(execFile);

/** A redis-server with an append-only file synced on every write, so a kill loses nothing it acknowledged. */
export class RedisNode implements BrokerNode {
  readonly kind = 'redis' as const;
  readonly port: number;
  readonly dir = mkdtempSync(join(tmpdir(), 'kq-faults-redis-'));
  #process: ChildProcess | undefined;

  constructor(port: number) {
    this.port = port;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  async start(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''];
    this.#process = spawn('redis-server', args, { stdio: 'ignore' });
    await waitUntil(() => this.#cli('PING').then((out) => out === 'PONG', () => false), 15_000, `redis-server on ${this.port}`);
  }

  async kill(): Promise<void> {
    const child = this.#process;
    this.#process = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  pause(): void {
    this.#process?.kill('SIGSTOP');
  }

  resume(): void {
    this.#process?.kill('SIGCONT');
  }

  async killConnections(): Promise<number> {
    return Number(await this.#cli('CLIENT', 'KILL', 'TYPE', 'normal'));
  }

  async destroy(): Promise<void> {
    this.resume();
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  async #cli(...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), ...args], { timeout: 5000 });
    return stdout.trim();
  }
}
