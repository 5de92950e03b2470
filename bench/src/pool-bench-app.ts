// The app of pool-bench.ts: the bench process and every pool child (thread or process) import it.
import { App } from '@kq/worker';

export const app = new App('pool-bench', { broker: 'memory://pool-bench', backend: 'memory://pool-bench' });

function fib(n: number): number {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

export const fibTask = app.task('bench.fib', (_ctx, n: number) => fib(n));
export const noopTask = app.task('bench.noop', () => null);
