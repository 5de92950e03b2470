import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CertificateFiles } from './test-certificates';
import { waitFor } from './wait-for';

const run = promisify(execFile);

export interface PostgresNodeOptions {
  /** Serve TLS (`ssl=on`) with this certificate; `ca` is the CA of client certificates it accepts. */
  tls?: { server: CertificateFiles; ca: string };
}

/**
 * A PostgreSQL server of a test's or the fault suite's own: its own data directory (initdb), port and socket
 * directory, fsync on, so a kill loses nothing it committed. Optionally with TLS.
 */
export class PostgresNode {
  readonly kind = 'postgres' as const;
  readonly port: number;
  readonly dir = mkdtempSync(join(tmpdir(), 'kq-faults-postgres-'));
  readonly #bin = postgresBin();
  #process: ChildProcess | undefined;
  #initialized = false;

  readonly #options: PostgresNodeOptions;

  constructor(port: number, options: PostgresNodeOptions = {}) {
    this.port = port;
    this.#options = options;
  }

  get url(): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async start(): Promise<void> {
    const data = join(this.dir, 'data');
    if (!this.#initialized) {
      if (process.getuid?.() === 0) chownSync(this.dir, postgresUser().uid, postgresUser().gid);
      await run(join(this.#bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8'], { timeout: 60_000, ...this.#user() });
      this.#initialized = true;
    }
    const args = ['-D', data, '-p', String(this.port), '-k', this.dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=on', '-c', 'max_connections=200'];
    if (this.#options.tls) args.push(...this.#tlsSettings(this.#options.tls).flatMap((setting) => ['-c', setting]));
    // Our own child (no runuser in between): a pause stops it and nothing else, and its exit is ours to reap.
    this.#process = spawn(join(this.#bin, 'postgres'), args, { stdio: 'ignore', ...this.#user() });
    await waitFor(() => this.#sql('SELECT 1').then((out) => out === '1', () => false), 30_000, `PostgreSQL on ${this.port}`);
  }

  async kill(): Promise<void> {
    const pids = this.#pids();
    for (const pid of pids) signal(pid, 'SIGKILL');
    const child = this.#process;
    this.#process = undefined;
    if (child && child.exitCode === null) await new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // A backend left behind would keep the port and the shared memory: wait until they are gone.
    await waitFor(() => this.#pids().every((pid) => !alive(pid)), 15_000, 'the PostgreSQL processes to go');
  }

  /** The postmaster and every backend stop being scheduled: connections stay open, nothing answers. */
  pause(): void {
    for (const pid of this.#pids()) signal(pid, 'SIGSTOP');
  }

  resume(): void {
    for (const pid of this.#pids()) signal(pid, 'SIGCONT');
  }

  async killConnections(): Promise<number> {
    const out = await this.#sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
    return Number(out);
  }

  async destroy(): Promise<void> {
    this.resume();
    await this.kill().catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * Serves `server` from now on (a server started with `tls`): its files replace the old ones and the server reloads
   * them (SIGHUP), so one server can show a client a good, an expired and a misnamed certificate in turn.
   */
  async replaceCertificate(server: CertificateFiles): Promise<void> {
    const tls = this.#options.tls;
    if (!tls) throw new Error('replaceCertificate needs a server started with the tls option');
    this.#tlsSettings({ server, ca: tls.ca });
    await this.#sql('SELECT pg_reload_conf()');
  }

  /** PostgreSQL reads its key only when the server's user owns it and nobody else may read it: copies made so. */
  #tlsSettings(tls: { server: CertificateFiles; ca: string }): string[] {
    const files = { ssl_cert_file: tls.server.cert, ssl_key_file: tls.server.key, ssl_ca_file: tls.ca };
    return [
      'ssl=on',
      ...Object.entries(files).map(([setting, source]) => {
        const copy = join(this.dir, `${setting}.pem`);
        copyFileSync(source, copy);
        chmodSync(copy, 0o600);
        if (process.getuid?.() === 0) chownSync(copy, postgresUser().uid, postgresUser().gid);
        return `${setting}=${copy}`;
      }),
    ];
  }

  /** The postmaster (from its pid file) and its children. */
  #pids(): number[] {
    const file = join(this.dir, 'data', 'postmaster.pid');
    if (!existsSync(file)) return [];
    const postmaster = Number(readFileSync(file, 'utf8').split('\n')[0]);
    if (!Number.isInteger(postmaster) || postmaster <= 0) return [];
    return [postmaster, ...childrenOf(postmaster)];
  }

  async #sql(query: string): Promise<string> {
    const { stdout } = await run('psql', ['-h', '127.0.0.1', '-p', String(this.port), '-U', 'postgres', '-d', 'postgres', '-tAc', query], { timeout: 5000 });
    return stdout.trim();
  }

  /** PostgreSQL refuses to run as root: then it runs as the `postgres` user. */
  #user(): { uid?: number; gid?: number } {
    return process.getuid?.() === 0 ? postgresUser() : {};
  }
}

function postgresBin(): string {
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort() : [];
  const latest = versions[versions.length - 1];
  if (!latest) throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql)');
  return join('/usr/lib/postgresql', latest, 'bin');
}

function postgresUser(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((entry) => entry.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) throw new Error('no postgres user to run PostgreSQL as');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Child pids, from /proc (PostgreSQL's backends are the postmaster's children). */
function childrenOf(parent: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) out.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

/** Running, or stopped: not gone and not a zombie (orphaned backends are reparented to a PID 1 that may never reap). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
