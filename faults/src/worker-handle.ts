import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('./drain-worker.ts', import.meta.url));

/** A worker process under test: started with node itself (tsx as a loader) so a signal reaches the worker, not a wrapper. */
export class WorkerHandle {
  readonly child: ChildProcess;
  #output = '';
  #maxRssKiB = 0;
  #sampler: NodeJS.Timeout;

  private constructor(child: ChildProcess) {
    this.child = child;
    child.stdout?.on('data', (chunk: Buffer) => (this.#output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.#output = (this.#output + chunk.toString()).slice(-20_000)));
    this.#sampler = setInterval(() => this.#sample(), 200);
    this.#sampler.unref();
  }

  static async start(env: Record<string, string>): Promise<WorkerHandle> {
    const child = spawn(process.execPath, ['--import', 'tsx', script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const handle = new WorkerHandle(child);
    const deadline = Date.now() + 30_000;
    while (!handle.#output.includes('ready')) {
      if (child.exitCode !== null || Date.now() > deadline) {
        // Not left running: nobody else holds it, and its pipes would keep the suite from exiting at the end.
        await handle.kill();
        throw new Error(`the worker did not start: ${handle.#output.slice(-2000)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return handle;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Highest resident set size seen, in MiB. */
  get maxRssMiB(): number {
    return Math.round(this.#maxRssKiB / 1024);
  }

  get output(): string {
    return this.#output;
  }

  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.child.kill(signal);
  }

  async exited(timeoutMs = 60_000): Promise<void> {
    if (!this.alive) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${this.child.pid} did not exit within ${timeoutMs} ms`)), timeoutMs);
      this.child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async kill(): Promise<void> {
    clearInterval(this.#sampler);
    if (!this.alive) return;
    const exited = this.exited();
    this.child.kill('SIGKILL');
    await exited;
  }

  #sample(): void {
    if (!this.alive || this.child.pid === undefined) return;
    try {
      const match = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${this.child.pid}/status`, 'utf8'));
      if (match) this.#maxRssKiB = Math.max(this.#maxRssKiB, Number(match[1]));
    } catch {
      // exited between the check and the read
    }
  }
}
