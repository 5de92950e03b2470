// One runner child process: started in its own process group, read line by line, waited for with a timeout, and
// always killed — on success, on failure, and when the orchestrator itself exits or is interrupted.
import { spawn, type ChildProcess } from 'node:child_process';
import { GO_LINE, RESULT_PREFIX, STOP_LINE, type RunnerResult } from './protocol';

export interface RunnerCommand {
  /** Says which runner this is in messages: "kq drain (redis)". */
  label: string;
  command: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Sees every line the runner prints (stdout and stderr). */
  onLine?: (line: string) => void;
}

const TAIL_LINES = 30;
const KILL_GRACE_MS = 3000;
/**
 * How long an exited runner's output may still come in. The parent can hear of the exit before it has read the last
 * lines the runner wrote (the result, then `process.exit`): seen as "exited with code 0 before reporting a result"
 * from one of eight drain processes on a loaded machine. A child of the runner holding the pipe open is not waited
 * for beyond this.
 */
const OUTPUT_AFTER_EXIT_MS = 2000;
const live = new Set<RunnerProcess>();

/** A line that arrived, and when (epoch ms, taken as it was read). */
export interface TimedLine {
  line: string;
  at: number;
}

type LineWaiter = { match: (line: string) => boolean; resolve: (line: TimedLine) => void };

export class RunnerProcess {
  readonly label: string;
  readonly #child: ChildProcess;
  readonly #onLineHook: ((line: string) => void) | undefined;
  readonly #tail: string[] = [];
  readonly #lines: TimedLine[] = [];
  #waiters: LineWaiter[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once the runner's stdout and stderr have both ended (everything it wrote has been read). */
  readonly #outputEnded: Promise<void>;
  #exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  #spawnError: Error | undefined;

  private constructor(command: RunnerCommand) {
    this.label = command.label;
    this.#onLineHook = command.onLine;
    // detached: its own process group, so a worker's children (Celery's prefork pool) go when it is killed.
    this.#child = spawn(command.command, [...command.args], {
      cwd: command.cwd,
      env: command.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.exited = new Promise((resolve) => {
      this.#child.once('exit', (code, signal) => {
        this.#exitInfo = { code, signal };
        live.delete(this);
        resolve(this.#exitInfo);
      });
      this.#child.once('error', (error) => {
        this.#spawnError = error;
        this.#exitInfo = { code: null, signal: null };
        live.delete(this);
        resolve(this.#exitInfo);
      });
    });
    this.#child.stdin?.on('error', () => undefined);
    this.#outputEnded = Promise.all([this.#read(this.#child.stdout, true), this.#read(this.#child.stderr, false)]).then(() => undefined);
    live.add(this);
  }

  static start(command: RunnerCommand): RunnerProcess {
    return new RunnerProcess(command);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** The last lines the runner printed (stdout and stderr), for failure messages. */
  tail(): string {
    const lines = this.#tail.join('\n').trim();
    return lines === '' ? '(it printed nothing)' : lines;
  }

  /** Resolves with the first stdout line (already seen or still to come) that matches; fails on exit or timeout. */
  waitForLine(match: (line: string) => boolean, timeoutMs: number, what: string): Promise<TimedLine> {
    const seen = this.#lines.find((entry) => match(entry.line));
    if (seen) return Promise.resolve(seen);
    return new Promise<TimedLine>((resolve, reject) => {
      const waiter: LineWaiter = {
        match,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((other) => other !== waiter);
        reject(new Error(`${this.label}: ${what} did not happen within ${Math.round(timeoutMs / 1000)} s. Last output:\n${this.tail()}`));
      }, timeoutMs);
      this.#waiters.push(waiter);
      void this.exited.then(async (exit) => {
        // What it wrote before exiting is read first: its last line may be the one waited for.
        await Promise.race([this.#outputEnded, sleep(OUTPUT_AFTER_EXIT_MS)]);
        if (!this.#waiters.includes(waiter)) return;
        clearTimeout(timer);
        this.#waiters = this.#waiters.filter((other) => other !== waiter);
        reject(new Error(`${this.label} ${this.#describeExit(exit)} before ${what}. Last output:\n${this.tail()}`));
      });
    });
  }

  /** Tells a runner waiting in `awaitGo()` to begin (it loaded and connected nothing timed before this). */
  go(): void {
    this.#child.stdin?.write(`${GO_LINE}\n`);
  }

  /** Tells a shared drain runner to stop and report (the broker holds nothing more). */
  stopDrain(): void {
    this.#child.stdin?.write(`${STOP_LINE}\n`);
  }

  /** The runner's result: its `KQBENCH_RESULT` line, then a clean exit. */
  async result(timeoutMs: number): Promise<RunnerResult> {
    const started = Date.now();
    const { line } = await this.waitForLine((text) => text.startsWith(RESULT_PREFIX), timeoutMs, 'reporting a result');
    const result = JSON.parse(line.slice(RESULT_PREFIX.length)) as RunnerResult;
    const exit = await Promise.race([this.exited, sleep(Math.max(5000, timeoutMs - (Date.now() - started))).then(() => undefined)]);
    if (!exit) throw new Error(`${this.label} reported a result but did not exit. Last output:\n${this.tail()}`);
    if (exit.code !== 0) throw new Error(`${this.label} reported a result but then ${this.#describeExit(exit)}. Last output:\n${this.tail()}`);
    return result;
  }

  /** SIGTERM to the process group, SIGKILL after a grace period; resolves once the runner is gone. */
  async stop(): Promise<void> {
    if (this.#exitInfo) return;
    this.#signal('SIGTERM');
    const gone = await Promise.race([this.exited.then(() => true), sleep(KILL_GRACE_MS).then(() => false)]);
    if (!gone) {
      this.#signal('SIGKILL');
      await this.exited;
    }
    // Whatever the group leader left behind (a prefork pool child) goes too.
    this.#signal('SIGKILL');
  }

  /** Synchronous last resort for process exit: kill the whole group now. */
  killNow(): void {
    this.#signal('SIGKILL');
  }

  #signal(signal: NodeJS.Signals): void {
    const pid = this.#child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is already gone.
    }
  }

  #describeExit(exit: { code: number | null; signal: NodeJS.Signals | null }): string {
    if (this.#spawnError) return `could not be started (${this.#spawnError.message})`;
    return exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  }

  /** Reads `stream` line by line; resolves when it ends (or closes, or fails). */
  #read(stream: NodeJS.ReadableStream | null, isStdout: boolean): Promise<void> {
    if (!stream) return Promise.resolve();
    let pending = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      pending += chunk;
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const line = pending.slice(0, newline).replace(/\r$/, '');
        pending = pending.slice(newline + 1);
        this.#onLine(line, isStdout);
        newline = pending.indexOf('\n');
      }
    });
    return new Promise((resolve) => {
      stream.on('end', () => {
        if (pending !== '') this.#onLine(pending, isStdout);
        pending = '';
        resolve();
      });
      stream.on('close', () => resolve());
      stream.on('error', () => resolve());
    });
  }

  #onLine(line: string, isStdout: boolean): void {
    const at = Date.now();
    this.#onLineHook?.(line);
    if (!line.startsWith(RESULT_PREFIX)) {
      this.#tail.push(line.length > 400 ? `${line.slice(0, 400)}…` : line);
      if (this.#tail.length > TAIL_LINES) this.#tail.shift();
    }
    // Python workers may print their markers on either stream (Celery redirects stdout to its logger).
    const entry = { line: isStdout ? line : line.replace(/^.*?(KQBENCH_)/, '$1'), at };
    if (!entry.line.startsWith('KQBENCH_')) return;
    this.#lines.push(entry);
    for (const waiter of [...this.#waiters]) {
      if (waiter.match(entry.line)) {
        this.#waiters = this.#waiters.filter((other) => other !== waiter);
        waiter.resolve(entry);
      }
    }
  }
}

/** Stops every runner still alive (used between cases and on the way out). */
export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((runner) => runner.stop()));
}

let exitHooksInstalled = false;

/** Makes sure no runner outlives the orchestrator: on exit, on Ctrl+C and on SIGTERM. */
export function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  process.on('exit', () => {
    for (const runner of live) runner.killNow();
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      process.stderr.write(`\n${signal}: stopping ${live.size} runner(s)\n`);
      for (const runner of live) runner.killNow();
      process.exit(130);
    });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
