import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

const src = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

const include = [
  'packages/*/test/**/*.test.ts',
  'test-harness/test/**/*.test.ts',
  'examples/*/test/**/*.test.ts',
  'bench/test/**/*.test.ts',
  'celery-suite/test/**/*.test.ts',
  'test/**/*.test.ts',
];
// The Redis Cluster and RabbitMQ cluster suites start clusters of their own and take minutes: `pnpm test:clusters`
// runs them; a plain `pnpm test` runs only the Redis Cluster smoke (packages/redis/test/cluster-smoke.test.ts).
const exclude = [...configDefaults.exclude, ...(process.env['KQ_CLUSTER_TESTS'] === '1' ? [] : ['packages/redis/test/cluster/**', 'packages/amqp/test/cluster/**'])];

/** Files run side by side (KQ_TEST_WORKERS overrides; 1 runs every file one at a time). */
const SIDE_BY_SIDE_WORKERS = Number(process.env['KQ_TEST_WORKERS'] ?? 3);

/**
 * Files that run alone, after the others: each keeps a core busy for seconds (a browser, a burst of 100 000 events,
 * a busy loop whose CPU is counted), checks how work is spread over time, which a busy machine would blur, or counts
 * what the whole shared Redis server did (run-case: LPUSH calls per task from INFO commandstats).
 */
const ALONE = [
  'packages/dashboard/test/browser.test.ts',
  'packages/dashboard/test/fleet-model.test.ts',
  'packages/worker/test/pool-scheduling.test.ts',
  'bench/test/postgres-peers.test.ts',
  'bench/test/run-case.test.ts',
];

// Tests run against the TypeScript sources (no build needed); the built packages are checked by `pnpm build`.
export default defineConfig({
  resolve: {
    alias: {
      '@kq/core': src('./packages/core/src/index.ts'),
      '@kq/redis': src('./packages/redis/src/index.ts'),
      '@kq/postgres': src('./packages/postgres/src/index.ts'),
      '@kq/amqp': src('./packages/amqp/src/index.ts'),
      '@kq/worker': src('./packages/worker/src/index.ts'),
      '@kq/dashboard': src('./packages/dashboard/src/index.ts'),
      '@kq/test-harness/redis-cluster': src('./test-harness/src/redis-cluster.ts'),
      '@kq/test-harness/rabbit-cluster': src('./test-harness/src/rabbit-cluster.ts'),
      '@kq/test-harness/postgres-node': src('./test-harness/src/postgres-node.ts'),
      '@kq/test-harness/private-redis-server': src('./test-harness/src/private-redis-server.ts'),
      '@kq/test-harness': src('./test-harness/src/index.ts'),
    },
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default'],
    // Most files wait on brokers, subprocesses and timers, not on the CPU, so several run side by side (vitest's
    // default on a 2-core box is one at a time). The files in ALONE run one at a time once the others are done.
    // (Each project lists its own include and exclude: `extends` would concatenate them with the root's.)
    projects: [
      { extends: true, test: { name: 'side-by-side', include, exclude: [...exclude, ...ALONE], maxWorkers: SIDE_BY_SIDE_WORKERS } },
      // groupOrder 1: after the side-by-side project has finished (projects of one group order run at the same time).
      { extends: true, test: { name: 'alone', include: ALONE, exclude, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
