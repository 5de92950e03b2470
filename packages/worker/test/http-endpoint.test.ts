import { MemoryBroker } from '@kq/core';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';

let seq = 0;

describe("a worker's HTTP endpoint (httpPort)", () => {
  let app: App;
  let worker: Worker | undefined;

  afterEach(async () => {
    await worker?.stop({ cold: true });
    worker = undefined;
    await app?.close();
  });

  const start = async (): Promise<{ worker: Worker; get: (path: string) => Promise<{ status: number; text: string }> }> => {
    const broker = `http-endpoint-${process.pid}-${++seq}`;
    MemoryBroker.reset(broker);
    app = new App('http', { broker: `memory://${broker}`, backend: `memory://${broker}` });
    app.task('h.add', (_ctx, x: number, y: number) => x + y);
    app.task('h.fail', () => {
      throw new RangeError('no');
    });
    worker = app.worker({ hostname: `http${seq}@test`, httpPort: 0, logger: new Logger('http', { level: 'critical', sink: () => undefined }) });
    await worker.start();
    const port = worker.http?.port as number;
    const get = async (path: string): Promise<{ status: number; text: string }> => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: response.status, text: await response.text() };
    };
    return { worker, get };
  };

  it('answers /healthz, and /readyz only while connected and consuming', async () => {
    const { worker: running, get } = await start();
    expect(await get('/healthz')).toMatchObject({ status: 200 });
    expect(JSON.parse((await get('/readyz')).text)).toEqual({ status: 'ready', connected: true, consuming: true });
    // Connected but consuming nothing (its last queue cancelled): not ready.
    await running.cancelQueue(running.queues[0]?.name as string);
    const notReady = await get('/readyz');
    expect(notReady.status).toBe(503);
    expect(JSON.parse(notReady.text)).toEqual({ status: 'not ready', connected: true, consuming: false });
    expect((await get('/nowhere')).status).toBe(404);
  });

  it('serves /metrics in the Prometheus text format, with task counts and runtimes', async () => {
    const { get } = await start();
    await (await app.sendTask('h.add', [1, 2])).get({ timeout: 5000 });
    await (await app.sendTask('h.fail')).get({ timeout: 5000 }).catch(() => undefined);
    const families = parsePrometheusTextFormat((await get('/metrics')).text);
    const byName = new Map(families.map((family) => [family.name, family]));
    const tasks = byName.get('kq_worker_tasks_total')?.metrics ?? [];
    const count = (task: string, state: string): number => Number(tasks.find((metric) => metric.labels?.['task'] === task && metric.labels?.['state'] === state)?.value ?? 0);
    expect(count('h.add', 'succeeded')).toBe(1);
    expect(count('h.fail', 'failed')).toBe(1);
    expect(byName.get('kq_task_runtime_seconds')?.type).toBe('HISTOGRAM');
    expect(byName.get('kq_worker_ready')?.metrics[0]?.value).toBe('1');
    expect(byName.get('kq_worker_pool_size')?.metrics[0]?.value).toBe('10');
  });
});
