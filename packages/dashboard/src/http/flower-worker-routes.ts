import type { FastifyInstance } from 'fastify';
import type { DashboardView } from '../dashboard-view';
import { booleanField, field } from './request-fields';

/**
 * `GET /api/workers` as Flower's: what the workers answered to the inspect calls (`?refresh=1` asks again first,
 * `?workername=` one worker, `?status=1` only whether each is alive), and `GET /api/queues/length`.
 */
export function registerFlowerWorkerRoutes(server: FastifyInstance, dashboard: DashboardView): void {
  server.get('/api/workers', async (request, reply) => {
    const workername = field(request, 'workername');
    if (booleanField(request, 'refresh')) {
      try {
        await dashboard.inspector.inspect(workername);
      } catch (error) {
        return reply.code(503).send({ error: `Failed to update workers: ${error instanceof Error ? error.message : String(error)}` });
      }
    }
    if (booleanField(request, 'status')) {
      const now = Date.now() / 1000;
      return Object.fromEntries([...dashboard.state.cluster.workers.values()].map((worker) => [worker.hostname, worker.isAlive(now)]));
    }
    if (workername) {
      const info = dashboard.state.inspected.get(workername);
      if (!info) return reply.code(404).send({ error: `Unknown worker '${workername}'` });
      return { [workername]: info };
    }
    return Object.fromEntries(dashboard.state.inspected);
  });

  // Flower's shape, plus `delayed`: the ETA messages the broker holds (`by_queue` where it can tell; null: cannot count).
  server.get('/api/queues/length', async () => {
    const active = await dashboard.sampleQueues();
    const { delayed } = dashboard.state;
    return { active_queues: active, delayed: delayed ? { total: delayed.total, ...(delayed.byQueue ? { by_queue: delayed.byQueue } : {}) } : null };
  });
}
