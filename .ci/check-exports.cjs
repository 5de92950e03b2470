// Every published package must load through its exports map both with require() and with import().
const { createRequire } = require('node:module');
const path = require('node:path');

// (@kq/test-harness imports vitest when loaded; the test run itself exercises it.)
const packages = ['@kq/core', '@kq/redis', '@kq/amqp', '@kq/postgres', '@kq/worker'];
// Resolve from a workspace package that depends on all of them.
const requireFrom = createRequire(path.join(__dirname, '..', 'examples', 'quickstart', 'package.json'));

(async () => {
  // The dashboard sits above the worker: the repository root depends on it.
  const fromRoot = createRequire(path.join(__dirname, '..', 'package.json'));
  for (const [name, from] of [...packages.map((name) => [name, requireFrom]), ['@kq/dashboard', fromRoot]]) {
    const cjs = from(name);
    const esm = await import(from.resolve(name).replace(/index\.cjs$/, 'index.js'));
    const names = Object.keys(cjs).length;
    if (names === 0 || Object.keys(esm).length !== names) throw new Error(`${name}: CJS exports ${names}, ESM ${Object.keys(esm).length}`);
    console.log(`${name}: ${names} exports via require and import`);
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
