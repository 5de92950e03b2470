import type { App } from '@kq/worker';
import type { FleetState } from './fleet-state';
import type { WorkerInspector } from './worker-inspector';

/**
 * What the HTTP routes and the overview read of a running dashboard: the app, the fleet state, the inspector, the
 * dead-letter queues and queue lengths. `Dashboard` implements it; they take this, so the dashboard, which builds
 * the server, is not imported back by it.
 */
export interface DashboardView {
  readonly app: App;
  readonly state: FleetState;
  readonly inspector: WorkerInspector;
  readonly deadLetterQueues: readonly string[];
  sampleQueues(): Promise<Array<{ name: string; messages: number }>>;
}
