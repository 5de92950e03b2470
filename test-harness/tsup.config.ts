import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: ['src/index.ts'],
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    clean: true,
    target: 'node20',
    shims: true,
  },
  {
    // Private Redis servers and Clusters, RabbitMQ nodes and clusters and PostgreSQL servers for the fault suite, the benchmark,
    // the Celery suite and the cluster tests,
    // importable without the suite (and vitest).
    entry: ['src/redis-cluster.ts', 'src/rabbit-cluster.ts', 'src/postgres-node.ts', 'src/private-redis-server.ts'],
    format: ['esm'],
    dts: true,
    sourcemap: true,
    target: 'node20',
  },
  {
    // The peer process the suite runs as a second OS process: a script (top-level await), so ESM only.
    entry: ['src/peer-process.ts'],
    format: ['esm'],
    sourcemap: true,
    target: 'node20',
  },
]);
