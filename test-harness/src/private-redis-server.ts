import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port';
import type { CertificateFiles } from './test-certificates';
import { waitFor } from './wait-for';

const run = promisify(execFile);

export interface PrivateRedisServerOptions {
  /**
   * Serve TLS only (`--port 0 --tls-port`): the server's certificate, the CA it trusts for client certificates, and
   * whether it demands one (mutual TLS).
   */
  tls?: { server: CertificateFiles; ca: string; requireClientCertificate?: boolean };
  /** ACL lines (`user kq on >pw ~kq* ...`), written to the server's ACL file. The default user stays as it is unless a line names it. */
  acl?: readonly string[];
  /** More redis-server arguments, e.g. cluster mode's. */
  args?: readonly string[];
  /**
   * Run as a sentinel (`--sentinel`) monitoring the master at 127.0.0.1:`port` as `name`; with `tls`, it speaks TLS to
   * clients and to the master (`tls-replication yes`).
   */
  sentinelOf?: { name: string; port: number };
}

/**
 * A redis-server of a test's own on a free port and its own directory, for TLS and ACL tests that must never touch
 * the shared Redis: no persistence, gone on `stop()`. `cli()` talks to it as the default user, over TLS with the
 * server's own certificate when it serves TLS.
 */
export class PrivateRedisServer {
  readonly dir = mkdtempSync(join(tmpdir(), 'kq-redis-'));
  readonly #options: PrivateRedisServerOptions;
  #process: ChildProcess | undefined;
  #port = 0;

  constructor(options: PrivateRedisServerOptions = {}) {
    this.#options = options;
  }

  get port(): number {
    return this.#port;
  }

  /** `redis://` or (TLS) `rediss://` on 127.0.0.1, with no credentials and no TLS parameters. */
  get url(): string {
    return `${this.#options.tls ? 'rediss' : 'redis'}://127.0.0.1:${this.#port}`;
  }

  async start(): Promise<void> {
    this.#port = await freePort();
    const args = ['--bind', '127.0.0.1', '--dir', this.dir, '--save', '', '--appendonly', 'no'];
    const tls = this.#options.tls;
    if (tls) {
      args.push('--port', '0', '--tls-port', String(this.#port), '--tls-cert-file', tls.server.cert, '--tls-key-file', tls.server.key);
      args.push('--tls-ca-cert-file', tls.ca, '--tls-auth-clients', tls.requireClientCertificate ? 'yes' : 'no');
    } else {
      args.push('--port', String(this.#port));
    }
    const sentinel = this.#options.sentinelOf;
    if (sentinel) {
      // A sentinel rewrites its configuration file, so it needs one of its own.
      const conf = join(this.dir, 'sentinel.conf');
      writeFileSync(conf, `sentinel monitor ${sentinel.name} 127.0.0.1 ${sentinel.port} 1\n`);
      args.unshift(conf, '--sentinel');
      if (tls) args.push('--tls-replication', 'yes');
    }
    args.push(...(this.#options.args ?? []));
    if (this.#options.acl) {
      const aclFile = join(this.dir, 'users.acl');
      writeFileSync(aclFile, `${this.#options.acl.join('\n')}\n`);
      args.push('--aclfile', aclFile);
    }
    const child = spawn('redis-server', args, { stdio: 'ignore' });
    this.#process = child;
    let exited = false;
    child.once('exit', () => (exited = true));
    await waitFor(async () => exited || (await this.cli('PING').then((out) => out === 'PONG', () => false)), 15_000, `redis-server on ${this.#port}`);
    if (exited) throw new Error(`redis-server on ${this.#port} exited at start (args: ${args.join(' ')})`);
  }

  /** Runs redis-cli against this server as the default user. */
  async cli(...args: string[]): Promise<string> {
    const tls = this.#options.tls;
    const tlsArgs = tls ? ['--tls', '--insecure', '--cert', tls.server.cert, '--key', tls.server.key] : [];
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(this.#port), ...tlsArgs, ...args], { timeout: 5000 });
    return stdout.trim();
  }

  async stop(): Promise<void> {
    const child = this.#process;
    this.#process = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
