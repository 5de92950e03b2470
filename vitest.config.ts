import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

const src = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

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
    include: [
      'packages/*/test/**/*.test.ts',
      'test-harness/test/**/*.test.ts',
      'examples/*/test/**/*.test.ts',
      'bench/test/**/*.test.ts',
      'celery-suite/test/**/*.test.ts',
      'test/**/*.test.ts',
    ],
    // The Redis Cluster and RabbitMQ cluster suites start clusters of their own and take minutes: `pnpm test:clusters`
    // runs them; a plain `pnpm test` runs only the Redis Cluster smoke (packages/redis/test/cluster-smoke.test.ts).
    exclude: [...configDefaults.exclude, ...(process.env['KQ_CLUSTER_TESTS'] === '1' ? [] : ['packages/redis/test/cluster/**', 'packages/amqp/test/cluster/**'])],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default'],
  },
});
