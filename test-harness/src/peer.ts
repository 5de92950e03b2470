import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** A consumer running in another OS process, holding what it receives, for the suite to kill. */
export interface PeerConsumer {
  /** Bodies of the deliveries it reported holding, in arrival order. */
  readonly held: readonly string[];
  /** What it wrote to stderr (for failure messages). */
  readonly errors: () => string;
  /** Sends SIGKILL and resolves once the process is gone. */
  kill(): Promise<void>;
}

/** The peer script: the compiled one next to this file when published, the TypeScript source in the repository. */
function peerScript(): string {
  for (const name of ['./peer-process.js', './peer-process.ts']) {
    const path = fileURLToPath(new URL(name, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error('@kq/test-harness: the peer-process script is missing from this install; reinstall the package.');
}

/** `--import tsx` when tsx can be found, so a TypeScript peer module (and the script in the repository) loads. */
function tsxFlags(): string[] {
  try {
    createRequire(import.meta.url).resolve('tsx');
    return ['--import', 'tsx'];
  } catch {
    return [];
  }
}

/**
 * Starts a consumer of `queue` in a new process made from `module` (its `createTransport` export), and resolves
 * once it consumes. It never settles what it receives: killing it leaves its deliveries held by a dead process.
 */
export async function startPeerConsumer(options: {
  module: string;
  env?: Readonly<Record<string, string>>;
  queue: string;
  prefetch: number;
  readyTimeoutMs: number;
}): Promise<PeerConsumer> {
  const child: ChildProcess = spawn(process.execPath, [...tsxFlags(), peerScript(), options.module, options.queue, String(options.prefetch)], {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const held: string[] = [];
  let stderr = '';
  let buffered = '';
  let ready = false;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line === 'ready') ready = true;
      else if (line.startsWith('held ')) held.push(line.slice('held '.length));
    }
  });
  const deadline = Date.now() + options.readyTimeoutMs;
  while (!ready) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`The peer process did not start consuming ${options.queue}: ${stderr.trim() || `exit code ${child.exitCode}`}`);
    }
    await sleep(20);
  }
  return {
    held,
    errors: () => stderr,
    async kill(): Promise<void> {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
