import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root (this package's parent). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Shared, read-only trees next to the repository: Celery's t/integration per version, the newer Celery trees. */
export const SHARED_PYTHON = resolve(REPO_ROOT, '..', 'shared', 'python');
/** Celery's t/integration per version (`v<version>/t/integration`): KQ_CELERY_INTEGRATION, else next to the repository. */
export const INTEGRATION_SUITES = process.env['KQ_CELERY_INTEGRATION'] ?? join(SHARED_PYTHON, 'celery-integration');
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
  /** On RabbitMQ, run with quorum queues and native delayed delivery (Celery 5.5+), as the shared README explains. */
  readonly rabbitQuorum: boolean;
}

export const CELERY_VERSIONS: readonly CeleryVersion[] = [
  { version: '5.2.6', pythonPath: [], integrationRoot: join(INTEGRATION_SUITES, 'v5.2.6'), resultExtended: false, rabbitQuorum: false },
  { version: '5.5.3', pythonPath: [join(SHARED_PYTHON, 'celery55')], integrationRoot: join(INTEGRATION_SUITES, 'v5.5.3'), resultExtended: true, rabbitQuorum: true },
  { version: '5.6.3', pythonPath: [join(SHARED_PYTHON, 'celery56')], integrationRoot: join(INTEGRATION_SUITES, 'v5.6.3'), resultExtended: true, rabbitQuorum: true },
];

/** The test files run against a worker, where the version has them. */
export const APPLICABLE_FILES: readonly string[] = ['test_canvas.py', 'test_tasks.py', 'test_inspect.py', 'test_security.py'];

/** The upstream files not run, with why: each tests Python's own worker or client, or needs no worker at all. */
export const NOT_APPLICABLE: Readonly<Record<string, string>> = {
  'test_backend.py': 'tests the Azure Block Blob result backend from the client; no worker takes part',
  'test_worker.py': "starts `celery worker` itself in a subprocess to test Python's command line (5.5+)",
  'test_serialization.py': 'starts a Python worker itself in a subprocess with a test serializer (5.5+)',
  'test_serialization_config.py': "a config module for test_serialization.py's subprocess worker, no tests (5.5+)",
  'test_worker_config.py': "a config module for test_worker.py's subprocess worker, no tests (5.5+)",
  'test_loader.py': "the client's task autodiscovery; no worker takes part (5.5+)",
  'test_django_settings.py': 'a Django settings module (memory broker), no tests (5.6)',
  'test_mem_leak_in_exception_handling.py': "Python's own memory use in eager tasks (memory broker); no worker takes part (5.6)",
  'test_dedup_chain_dispatch.py': "starts a Python solo worker in-process (`start_worker`) to test Python's redelivery dedup (5.6)",
  'test_prefork_shutdown.py': "starts a Python prefork worker in-process to test its heartbeats during a warm shutdown (5.6)",
  'test_native_delayed_delivery_binding.py':
    "starts a Python worker in-process and inspects its DelayedDelivery bootstep; kq's ladder bindings have interop tests of their own (5.6, RabbitMQ)",
  'test_quorum_queue_qos_cluster_simulation.py': "starts Python workers in subprocesses, one patched to simulate global-QoS refusal (5.6, RabbitMQ)",
  'test_rabbitmq_chord_unlock_routing.py': 'starts a Python worker in-process for chord_unlock routing; xfail upstream (5.6, RabbitMQ)',
  'test_rabbitmq_default_queue_type_fallback.py': "starts a Python worker in-process to test its classic-queue fallback; xfail upstream (5.6, RabbitMQ)",
  'test_rabbitmq_quorum_queue_cycle_detection.py': "starts a Python worker in-process and patches its ETA handling (5.6, RabbitMQ)",
};

/** The applicable files this version's `t/integration` has. */
export function applicableFiles(celery: CeleryVersion): string[] {
  return APPLICABLE_FILES.filter((file) => existsSync(join(celery.integrationRoot, 't', 'integration', file)));
}

/** Whether this version's upstream tests can be read (CI passes the suite's step with one line when they cannot). */
export function integrationSuiteFound(version: string): boolean {
  const found = CELERY_VERSIONS.find((candidate) => candidate.version === version);
  return found !== undefined && existsSync(join(found.integrationRoot, 't', 'integration'));
}

export function celeryVersion(version: string): CeleryVersion {
  const found = CELERY_VERSIONS.find((candidate) => candidate.version === version);
  if (!found) throw new Error(`Unknown Celery version ${version}: pick from ${CELERY_VERSIONS.map((v) => v.version).join(', ')}.`);
  if (!existsSync(join(found.integrationRoot, 't', 'integration'))) {
    throw new Error(`${found.integrationRoot}/t/integration is missing: the harness reads upstream's tests from the shared celery-integration folder next to the repository, or from KQ_CELERY_INTEGRATION.`);
  }
  return found;
}
