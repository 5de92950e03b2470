import { defineConfig } from 'tsup';

export default defineConfig([
  {
    // One build for the library, the pool child and the CLI, so they share chunks: an app module importing
    // `@kq/worker` gets the very classes the CLI checks it with and a pool child runs its tasks with.
    // (The CLI's `#!/usr/bin/env node` comes from the first line of src/cli/kq.ts, which esbuild keeps.)
    entry: { index: 'src/index.ts', 'pool/child': 'src/pool/child.ts', 'cli/kq': 'src/cli/kq.ts' },
    format: ['esm', 'cjs'],
    dts: { entry: { index: 'src/index.ts' } },
    sourcemap: true,
    clean: true,
    target: 'node20',
    shims: true,
    // Loaded on demand from the user's install, never bundled: tsx for TypeScript app modules, the dashboard for
    // `kq dashboard`.
    external: ['tsx', '@kq/dashboard'],
  },
]);
