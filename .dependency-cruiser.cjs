// The layers `pnpm lint:layers` enforces, type-only imports included (docs/architecture.md draws them).
// Packages: core ← redis/amqp/postgres ← worker ← dashboard. Inside @kq/worker: each folder of src/ names the
// folders it may import; anything else is an upward or sideways import and fails. In every package, no two folders
// import each other, directly or round a circle.

/** @kq/worker/src: folder → the folders it may import (index.ts, the public API, may import all of them). */
const WORKER_FOLDERS = {
  errors: [],
  platform: [],
  protocol: ['errors'],
  telemetry: ['errors', 'protocol'],
  log: ['platform', 'telemetry'],
  config: ['log'],
  security: ['config', 'errors'],
  control: ['config'],
  send: ['config', 'protocol'],
  results: ['config', 'errors', 'protocol'],
  contract: ['config', 'control', 'log', 'results', 'send'],
  canvas: ['contract', 'errors', 'protocol', 'results', 'send'],
  task: ['canvas', 'contract', 'errors', 'log', 'protocol', 'results', 'send'],
  events: ['contract', 'protocol', 'results', 'send'],
  pool: ['contract', 'errors', 'log', 'platform', 'protocol', 'send', 'task'],
  runtime: ['canvas', 'config', 'contract', 'errors', 'events', 'log', 'platform', 'pool', 'protocol', 'results', 'task', 'telemetry'],
  cluster: ['config', 'events', 'log', 'protocol', 'runtime', 'task'],
  beat: ['contract', 'errors', 'events', 'log', 'platform', 'protocol', 'runtime', 'task'],
  app: ['beat', 'canvas', 'cluster', 'config', 'contract', 'control', 'events', 'log', 'pool', 'protocol', 'results', 'runtime', 'security', 'send', 'task', 'telemetry'],
  cli: ['app', 'beat', 'cluster', 'config', 'control', 'errors', 'events', 'log', 'platform', 'pool', 'protocol', 'results', 'runtime', 'send', 'task'],
};

/** Which kq packages each package may import (by its own name or a path). */
const PACKAGES = {
  core: [],
  redis: ['core'],
  amqp: ['core'],
  postgres: ['core'],
  worker: ['core'],
  dashboard: ['core', 'worker'],
};

const WORKER = '^packages/worker/src/';

const folders = Object.keys(WORKER_FOLDERS);

const workerFolderRules = Object.entries(WORKER_FOLDERS).map(([folder, allowed]) => ({
  name: `worker-${folder}`,
  severity: 'error',
  comment: `@kq/worker's ${folder}/ may import only ${allowed.length ? allowed.map((f) => `${f}/`).join(', ') : 'no other folder'} (.dependency-cruiser.cjs names the allowed arrows; docs/architecture.md draws them).`,
  from: { path: `${WORKER}${folder}/` },
  to: { path: WORKER, pathNot: `${WORKER}(${[folder, ...allowed].join('|')})/` },
}));

const packageRules = Object.entries(PACKAGES).map(([name, allowed]) => ({
  name: `package-${name}`,
  severity: 'error',
  comment: `@kq/${name} may import only ${allowed.length ? allowed.map((p) => `@kq/${p}`).join(', ') : 'no other kq package'}: packages import downwards only, types too.`,
  from: { path: `^packages/${name}/src/` },
  to: { path: '^(packages/[^/]+|test-harness)/', pathNot: `^packages/(${[name, ...allowed].join('|')})/` },
}));

module.exports = {
  forbidden: [
    ...packageRules,
    ...workerFolderRules,
    {
      name: 'worker-unlisted-folder',
      severity: 'error',
      comment: `Every file of @kq/worker/src is in a folder named in .dependency-cruiser.cjs (or is src/index.ts): add the folder and its allowed arrows there.`,
      from: { path: WORKER, pathNot: `${WORKER}(index\\.ts$|(${folders.join('|')})/)` },
      to: {},
    },
    {
      name: 'no-import-of-own-index',
      severity: 'error',
      comment: "A package's src/index.ts is its public face: nothing inside the package imports it.",
      from: { path: '^(packages/[^/]+|test-harness)/src/' },
      to: { path: '^$1/src/index\\.ts$' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle between files, type-only imports counted: one concept split over files, or a type to move down (or declare the narrow interface one side uses next to it).',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-folder-circle',
      severity: 'error',
      comment: 'Two folders of a package import each other, directly or round a circle: move the shared type down or inject it.',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
    {
      name: 'test-reaches-into-another-package',
      severity: 'error',
      comment: "A test imports another package through its name (@kq/...), never from that package's src/.",
      from: { path: '^packages/([^/]+)/test/' },
      to: { path: '^(packages/[^/]+|test-harness)/src/', pathNot: '^packages/$1/src/', dependencyTypesNot: ['aliased'] },
    },
  ],
  options: {
    // Type-only imports count: a layer that needs a higher layer's type depends on it.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules)/' },
    // @kq/* names resolve to the sources (the packages' `kq-source` export condition), so the package rules see them.
    enhancedResolveOptions: { conditionNames: ['kq-source', 'import', 'require', 'node', 'default'], exportsFields: ['exports'] },
  },
};
