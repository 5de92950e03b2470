import type { AppContract } from '../../contract/app-contract';
import type { WorkerStep } from '../../runtime/bootstep';
import type { WorkerHost } from '../../runtime/worker-host';
import { periodicTasks, type PeriodicTask } from './define-periodic';

/**
 * The worker step that keeps the app's periodic tasks alive: on start, and then every half `staleAfter`, it starts
 * the cycle of every enabled periodic task that has none (`PeriodicTask.start`, a test-and-set in the broker, so any
 * number of workers start one cycle). A cycle whose message the broker lost is thus restarted after `staleAfter`.
 *
 *   app.worker({ steps: [periodicStep()] })
 */
export function periodicStep(): WorkerStep {
  const timers: NodeJS.Timeout[] = [];
  return {
    name: 'periodic',
    async start(worker: WorkerHost): Promise<void> {
      for (const periodic of periodicTasks(worker.app)) {
        if (!periodic.enabled) continue;
        await ensure(worker.app, periodic);
        const timer = setInterval(() => void ensure(worker.app, periodic), Math.max(1000, periodic.staleAfterMs / 2));
        timer.unref();
        timers.push(timer);
      }
    },
    async stop(): Promise<void> {
      for (const timer of timers.splice(0)) clearInterval(timer);
    },
  };
}

async function ensure(app: AppContract, periodic: PeriodicTask<never[], unknown>): Promise<void> {
  try {
    await periodic.start();
  } catch (error) {
    app.log.warning(`periodic ${periodic.name}: could not check or start its cycle: ${error instanceof Error ? error.message : String(error)}`);
  }
}
