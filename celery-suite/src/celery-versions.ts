import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root (this package's parent). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Shared, read-only trees next to the repository: Celery's t/integration per version, the newer Celery trees. */
export const SHARED_PYTHON = resolve(REPO_ROOT, '..', 'shared', 'python');
/** Our pytest plugin and the baseline's Python worker app. */
export const HARNESS_PYTHON = resolve(REPO_ROOT, 'celery-suite', 'python');

export type BrokerKind = 'redis' | 'amqp';

export interface CeleryVersion {
  readonly version: string;
  /** Folders put first on PYTHONPATH so `import celery` is this version (none: Debian's 5.2.6). */
  readonly pythonPath: readonly string[];
  /** Upstream's repository root at that tag, holding `t/integration` (read in place, never copied). */
  readonly integrationRoot: string;
  /** Whether the version's conftest sets `result_extended` (the workers store what its client reads). */
  readonly resultExtended: boolean;
}

export const CELERY_VERSIONS: readonly CeleryVersion[] = [
  { version: '5.2.6', pythonPath: [], integrationRoot: join(SHARED_PYTHON, 'celery-integration', 'v5.2.6'), resultExtended: false },
  { version: '5.5.3', pythonPath: [join(SHARED_PYTHON, 'celery55')], integrationRoot: join(SHARED_PYTHON, 'celery-integration', 'v5.5.3'), resultExtended: true },
  { version: '5.6.3', pythonPath: [join(SHARED_PYTHON, 'celery56')], integrationRoot: join(SHARED_PYTHON, 'celery-integration', 'v5.6.3'), resultExtended: true },
];

/** The test files run against a worker, and the ones that do not apply, with why. */
export const APPLICABLE_FILES: readonly string[] = ['test_canvas.py', 'test_tasks.py', 'test_inspect.py'];

export const NOT_APPLICABLE: Readonly<Record<string, string>> = {
  'test_backend.py': 'tests the Azure Block Blob result backend from the client; no worker takes part',
  'test_security.py': "message signing (the `auth` serializer): not in the selection yet; kq's `auth` serializer arrived after this run",
  'test_worker.py': "starts `celery worker` itself in a subprocess to test Python's command line (5.5+)",
  'test_serialization.py': 'starts a Python worker itself in a subprocess with a test serializer (5.5+)',
  'test_serialization_config.py': "a config module for test_serialization.py's subprocess worker, no tests (5.5+)",
  'test_worker_config.py': "a config module for test_worker.py's subprocess worker, no tests (5.5+)",
  'test_loader.py': "the client's task autodiscovery; no worker takes part (5.5+)",
};

export function celeryVersion(version: string): CeleryVersion {
  const found = CELERY_VERSIONS.find((candidate) => candidate.version === version);
  if (!found) throw new Error(`Unknown Celery version ${version}: pick from ${CELERY_VERSIONS.map((v) => v.version).join(', ')}.`);
  if (!existsSync(join(found.integrationRoot, 't', 'integration'))) {
    throw new Error(`${found.integrationRoot}/t/integration is missing: the harness reads upstream's tests from ../shared/python/celery-integration.`);
  }
  return found;
}
