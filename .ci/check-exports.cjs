// Every published package must load through its exports map both with require() and with import().
const { execFileSync } = require('node:child_process');
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
    // require() gets the ESM build through the `module-sync` condition (Node >= 20.19), as import does: one copy of
    // the package whichever way an app loads it. The CommonJS build stays for older Nodes and bundlers.
    const esm = await import(from.resolve(name));
    if (from(name) !== esm) throw new Error(`${name}: require() and import load different builds`);
    // In a process of its own: loading both builds in one is the DuplicatePackageCopies error.
    const cjsFile = from.resolve(name).replace(/index\.js$/, 'index.cjs');
    const names = Number(execFileSync(process.execPath, ['-p', `Object.keys(require(${JSON.stringify(cjsFile)})).length`], { encoding: 'utf8' }));
    if (names === 0 || Object.keys(esm).length !== names) throw new Error(`${name}: CJS exports ${names}, ESM ${Object.keys(esm).length}`);
    console.log(`${name}: ${names} exports via require and import, one build for both`);
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
