// `--extras`: the standalone benchmarks other parts of kq keep in this package (transport vs raw driver, pools), run
// after the side-by-side cases and appended to RESULTS.md as they print.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RunnerProcess } from './runner-process';
import { BENCH_DIR, kqBuild, tsxLoader } from './systems';

export interface ExtraResult {
  file: string;
  output: string;
  ok: boolean;
}

/** Each standalone benchmark and the flags it gets (the pool bench's --n counts CPU-bound tasks: its default stays). */
const EXTRAS: ReadonlyArray<{ file: string; args: (n: number, runs: number) => string[] }> = [
  { file: 'redis-transport-bench.ts', args: (n, runs) => [`--n=${n}`, `--runs=${runs}`] },
  { file: 'amqp-transport-bench.ts', args: (n, runs) => [`--n=${n}`, `--runs=${runs}`] },
  { file: 'pool-bench.ts', args: (_n, runs) => [`--runs=${runs}`] },
];

export async function runExtras(options: { n: number; runs: number; redisUrl: string; amqpUrl: string; timeoutMs: number }): Promise<ExtraResult[]> {
  const results: ExtraResult[] = [];
  for (const { file, args } of EXTRAS) {
    const path = fileURLToPath(new URL(`./${file}`, import.meta.url));
    if (!existsSync(path)) continue;
    process.stdout.write(`  extra ${file}\n`);
    const lines: string[] = [];
    const runner = RunnerProcess.start({
      label: file,
      command: process.execPath,
      args: ['--import', tsxLoader(), path, ...args(options.n, options.runs)],
      cwd: BENCH_DIR,
      env: { ...process.env, KQ_REDIS_URL: options.redisUrl, KQ_AMQP_URL: options.amqpUrl, TSX_TSCONFIG_PATH: kqBuild().tsconfig, NO_COLOR: '1' },
      onLine: (line) => lines.push(line),
    });
    const exit = await Promise.race([runner.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), options.timeoutMs).unref())]);
    await runner.stop();
    const ok = exit !== null && exit.code === 0;
    const why = exit === null ? `\n(gave up after ${Math.round(options.timeoutMs / 1000)} s)` : exit.code === 0 ? '' : `\n(exited with code ${exit.code ?? exit.signal})`;
    results.push({ file, output: `${lines.join('\n').trim()}${why}`, ok });
  }
  return results;
}
