import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { RunnerProcess, stopAll } from '../src/runner-process';

/** A runner made of inline JavaScript, so the orchestration is tested without brokers. */
function fake(script: string, label = 'fake runner'): RunnerProcess {
  return RunnerProcess.start({ label, command: process.execPath, args: ['-e', script], cwd: process.cwd(), env: { ...process.env } });
}

/** Running (a zombie waiting for init to reap it counts as gone). */
function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc: trust the signal check
  }
}

afterEach(async () => {
  await stopAll();
});

describe('RunnerProcess', () => {
  it('returns the result line of a runner that exits cleanly', async () => {
    const runner = fake(`console.log('noise'); console.log('KQBENCH_RESULT ' + JSON.stringify({ kind: 'enqueue', elapsedMs: 12, published: 3 }));`);
    await expect(runner.result(10_000)).resolves.toEqual({ kind: 'enqueue', elapsedMs: 12, published: 3 });
  });

  it('fails with the exit code and the runner’s last output when it dies before reporting', async () => {
    const runner = fake(`console.error('Error: connect ECONNREFUSED 127.0.0.1:6379'); process.exit(3);`, 'kq drain (redis)');
    await expect(runner.result(10_000)).rejects.toThrow(/kq drain \(redis\) exited with code 3 before reporting a result[\s\S]*ECONNREFUSED/);
  });

  it('reads a result line that arrives after the runner’s exit was heard (its output is read to the end first)', async () => {
    // The runner exits at once; a child of it, on the same stdout, writes the result 300 ms later: the parent hears
    // the exit first, as it can when a runner writes its result and exits on a loaded machine.
    const late = `setTimeout(() => console.log('KQBENCH_RESULT ' + JSON.stringify({ kind: 'enqueue', elapsedMs: 5, published: 1 })), 300)`;
    const runner = fake(`require('node:child_process').spawn(process.execPath, ['-e', ${JSON.stringify(late)}], { stdio: ['ignore', 'inherit', 'inherit'] }).unref(); process.exit(0);`);
    await expect(runner.result(10_000)).resolves.toEqual({ kind: 'enqueue', elapsedMs: 5, published: 1 });
  });

  it('fails when a result is followed by a non-zero exit', async () => {
    const runner = fake(`console.log('KQBENCH_RESULT {"kind":"enqueue","elapsedMs":1,"published":1}'); process.exit(1);`);
    await expect(runner.result(10_000)).rejects.toThrow(/reported a result but then exited with code 1/);
  });

  it('times out a runner that hangs, says so, and kills it', async () => {
    const runner = fake(`process.on('SIGTERM', () => {}); setInterval(() => {}, 1000); console.log('still going'); console.log('KQBENCH_STARTED');`, 'stuck runner');
    // Running first (node takes a while to start on a busy machine): the 500 ms are the hang's, not the start-up's.
    await runner.waitForLine((line) => line === 'KQBENCH_STARTED', 10_000, 'the runner starting');
    await expect(runner.result(500)).rejects.toThrow(/stuck runner: reporting a result did not happen within 1 s[\s\S]*still going/);
    expect(alive(runner.pid)).toBe(true);
    await runner.stop(); // ignores SIGTERM: killed after the grace period
    expect(alive(runner.pid)).toBe(false);
  }, 15_000);

  it('waits for a marker line, then sends GO on stdin', async () => {
    const runner = fake(`
      console.log('KQBENCH_READY');
      process.stdin.setEncoding('utf8');
      process.stdin.on('data', (text) => {
        if (text.includes('GO')) console.log('KQBENCH_RESULT {"kind":"enqueue","elapsedMs":0,"published":0}'), process.exit(0);
      });`);
    await runner.waitForLine((line) => line === 'KQBENCH_READY', 10_000, 'ready');
    runner.go();
    await expect(runner.result(10_000)).resolves.toMatchObject({ kind: 'enqueue' });
  });

  it('kills the whole process group (a worker’s pool children too)', async () => {
    const runner = fake(`
      const { spawn } = require('node:child_process');
      const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
      console.log('KQBENCH_CHILD ' + child.pid);
      setInterval(() => {}, 1000);`);
    const { line } = await runner.waitForLine((text) => text.startsWith('KQBENCH_CHILD '), 10_000, 'the child starting');
    const child = Number(line.split(' ')[1]);
    expect(alive(child)).toBe(true);
    await runner.stop();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(alive(child)).toBe(false);
  });
});
