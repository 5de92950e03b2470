// The UI in a real browser (Chromium through playwright-core), on a mixed fleet — a kq worker and a Python Celery
// 5.2.6 worker — on Redis and on RabbitMQ: both workers appear online with both charts drawn, a task sent while the
// tasks page is open appears without a reload and is found by search, its page shows its result and timeline and
// sends it again, revoke reaches the real worker, pool grow acts on it, and the dead letters (Redis's list, a named
// RabbitMQ dead-letter queue) are listed and purged.
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { Queue } from '@kq/core';
import { brokerReachable, brokerUrls, pythonAvailable } from '@kq/test-harness';
import { App, Logger, type Worker } from '@kq/worker';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dashboard } from '../src/index';
import { startPythonWorker } from '../../worker/test/fixtures/python-client';

const CHROMIUM = '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  if (process.env['KQ_REQUIRE_BROKERS'] === '1') throw new Error(`${CHROMIUM} is missing; KQ_REQUIRE_BROKERS=1 makes that a failure. Install: apt-get install -y chromium`);
  console.warn(`[kq] skipping the dashboard browser test: ${CHROMIUM} is missing (apt-get install -y chromium)`);
}
const quiet = new Logger('test', { level: 'critical', sink: () => undefined });
/** `KQ_DASHBOARD_SCREENSHOTS=<dir>` saves the pages the README shows. */
const screenshots = process.env['KQ_DASHBOARD_SCREENSHOTS'];
const python = await pythonAvailable(['celery']);

const fleets = [
  { label: 'Redis', broker: `${brokerUrls.redis}/7`, backend: `${brokerUrls.redis}/7`, up: await brokerReachable('redis') },
  { label: 'RabbitMQ', broker: brokerUrls.amqp, backend: 'rpc://', up: await brokerReachable('amqp') },
] as const;

describe.each(fleets)('the dashboard in Chromium, on a mixed fleet on $label', ({ label, broker, backend, up }) => {
  const ns = `kqui${randomUUID().slice(0, 8)}`;
  const queue = `${ns}.q`;
  const hostname = `ui@${ns}`;
  const pyHost = `py@${ns}`;
  let app: App;
  let worker: Worker;
  let py: ChildProcess | undefined;
  let dashboard: Dashboard;
  let browser: Browser;
  let page: Page;
  const skip = !haveChromium || !up;

  beforeAll(async () => {
    if (skip) return;
    app = new App('dash-ui', { broker, backend, taskDefaultQueue: queue, controlExchange: ns, eventExchange: `${ns}.ev` });
    app.task('ui.add', (_ctx, x: number, y: number) => x + y);
    worker = app.worker({ queues: [queue], hostname, logger: quiet, concurrency: 2, cluster: { taskEvents: true, heartbeatInterval: 0.5, mingle: false, gossip: false } });
    await worker.start();
    if (python) {
      py = startPythonWorker(pyHost, { KQ_INTEROP_BROKER: broker, KQ_INTEROP_BACKEND: backend, KQ_INTEROP_PY_QUEUE: `${ns}.py`, KQ_INTEROP_NAMESPACE: ns, KQ_INTEROP_EVENT_EXCHANGE: `${ns}.ev` }, ['-E']);
    }
    dashboard = new Dashboard({ app: new App('dash', { broker, backend, controlExchange: ns, eventExchange: `${ns}.ev` }), port: 0, logger: quiet, inspectTimeoutMs: 500, inspectIntervalMs: 2000 });
    await dashboard.start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  }, 60_000);

  afterAll(async () => {
    if (skip) return;
    py?.kill('SIGKILL');
    await browser?.close();
    await dashboard?.close();
    await dashboard?.app.close();
    await worker?.stop();
    await app?.connection.ensure((channel) => channel.deleteQueue(queue)).catch(() => undefined);
    await app?.close();
  });

  const shot = async (name: string): Promise<void> => {
    if (!screenshots || label !== 'Redis') return;
    mkdirSync(screenshots, { recursive: true });
    await page.screenshot({ path: `${screenshots}/${name}.png` });
  };

  it.skipIf(skip)('shows the kq worker and the Python worker online, with pool and queue, and both charts drawn', async () => {
    // Tasks on both sides first, so the charts have something to draw.
    await Promise.all([0, 1, 2, 3].map(async (i) => (await app.sendTask('ui.add', [i, i])).get({ timeout: 10_000 })));
    if (python) await (await app.sendTask('interop.py_add', [1, 2], {}, { queue: `${ns}.py` })).get({ timeout: 30_000 });
    await page.goto(`${dashboard.url}/#/workers`);
    for (const host of python ? [hostname, pyHost] : [hostname]) {
      const row = page.locator(`tr[data-worker="${host}"]`);
      await row.waitFor({ timeout: 20_000 });
      await expect.poll(async () => row.locator('td').nth(1).textContent(), { timeout: 20_000 }).toBe('online');
    }
    await expect.poll(async () => page.locator(`tr[data-worker="${hostname}"]`).textContent(), { timeout: 15_000 }).toContain(queue);
    // uPlot draws on canvases: two charts, each with its canvas sized
    await expect.poll(async () => page.locator('.uplot canvas').count()).toBe(2);
    const box = await page.locator('.uplot canvas').first().boundingBox();
    expect(box?.width).toBeGreaterThan(100);
    await shot('workers');
  }, 60_000);

  it.skipIf(skip)('a task sent while the tasks page is open appears without a reload, is found by search, and its page shows its result', async () => {
    await page.goto(`${dashboard.url}/#/tasks`);
    await page.locator('#tasks').waitFor();
    const result = await app.sendTask('ui.add', [20, 22]);
    expect(await result.get({ timeout: 10_000 })).toBe(42);
    const link = page.locator(`a[href="#/task/${result.id}"]`);
    await link.waitFor({ timeout: 15_000 });
    await page.fill('input[name="search"]', 'args:(20, result:42');
    await page.click('#filters button');
    await expect.poll(async () => page.locator('#tasks tbody tr').count(), { timeout: 10_000 }).toBe(1);
    await expect.poll(async () => page.locator('#tasks tbody tr .state').textContent(), { timeout: 10_000 }).toBe('SUCCESS');
    await shot('tasks');
    await link.click();
    await page.getByText('Timeline').waitFor();
    const details = await page.locator('dl').textContent();
    expect(details).toContain(result.id);
    expect(details).toContain('42');
    expect(await page.locator('table').last().textContent()).toMatch(/received.*started.*succeeded/s);
    await shot('task');

    // Send again: a new task with the same arguments, linked from this page once sent, and run by the worker.
    await page.click('#resend');
    await page.locator('.toast').filter({ hasText: 'Sent ui.add again as' }).waitFor({ timeout: 10_000 });
    const resent = page.locator('#resent a');
    await resent.waitFor({ timeout: 10_000 });
    const newId = (await resent.textContent()) ?? '';
    expect(newId).not.toBe(result.id);
    await expect.poll(() => dashboard.state.task(newId)?.state, { timeout: 15_000 }).toBe('SUCCESS');
    expect(dashboard.state.task(newId)).toMatchObject({ name: 'ui.add', args: '(20, 22)', result: '42' });
  }, 40_000);

  it.skipIf(skip)('revoke from a task page reaches the worker; pool grow from the worker page grows its pool', async () => {
    const later = await app.sendTask('ui.add', [1, 1], {}, { countdown: 60 });
    await page.goto(`${dashboard.url}/#/task/${later.id}`);
    await page.locator('#revoke').waitFor({ timeout: 15_000 });
    await page.click('#revoke');
    await page.locator('.toast').filter({ hasText: `Revoked '${later.id}'` }).waitFor({ timeout: 10_000 });
    await expect.poll(() => worker.state.revoked.has(later.id), { timeout: 10_000 }).toBe(true);

    const before = worker.pool.limit;
    await page.goto(`${dashboard.url}/#/worker/${encodeURIComponent(hostname)}`);
    await page.locator('form[data-act="grow"] button').click();
    await page.locator('.toast').filter({ hasText: `Growing '${hostname}' worker's pool by 1` }).waitFor({ timeout: 10_000 });
    await expect.poll(() => worker.pool.limit, { timeout: 10_000 }).toBe(before + 1);
    await shot('worker');

    // The queues page: the queue, its consumer, and the ETA task the worker holds from it (revoked, still held).
    const eta = await app.sendTask('ui.add', [2, 2], {}, { countdown: 60 });
    await expect.poll(() => worker.scheduled().some((entry) => entry.request.id === eta.id), { timeout: 10_000 }).toBe(true);
    await dashboard.inspector.inspect();
    await page.goto(`${dashboard.url}/#/queues`);
    const row = page.locator(`tr[data-queue="${queue}"]`);
    await row.waitFor({ timeout: 10_000 });
    expect(await row.locator('td').nth(3).textContent()).toBe(hostname);
    expect(Number(await row.locator('td').nth(4).textContent())).toBeGreaterThanOrEqual(1);

    // Dead letters on RabbitMQ: in a dead-letter queue, named on the page (the dashboard was given none).
    if (label !== 'Redis') {
      const dlq = `${ns}.dlq`;
      const source = `${ns}.src`;
      try {
        await app.connection.ensure(async (channel) => {
          await channel.declareQueue(new Queue(dlq, { durable: false }));
          await channel.declareQueue(new Queue(source, { durable: false, deadLetterExchange: '', deadLetterRoutingKey: dlq }));
          await channel.publish('', source, { body: Buffer.from('[[], {}, {}]'), contentType: 'application/json', contentEncoding: 'utf-8', headers: { task: 'ui.nobody', id: `${ns}-dead` }, properties: { deliveryMode: 2 } });
          let delivery = await channel.get(source);
          for (let i = 0; !delivery && i < 100; i++) delivery = await new Promise((resolve) => setTimeout(resolve, 50)).then(() => channel.get(source));
          await delivery?.reject('unknown task');
        });
        await page.goto(`${dashboard.url}/#/dead-letters`);
        await page.locator('#dlq-error').filter({ hasText: 'dead-letter queue' }).waitFor({ timeout: 10_000 });
        await page.fill('#dlq-form input[name="queue"]', dlq);
        await page.click('#dlq-form button');
        const kept = page.locator('#dead-letters tbody tr', { hasText: `${ns}-dead` });
        await kept.waitFor({ timeout: 10_000 });
        expect(await kept.textContent()).toContain(`kept in ${dlq}`);
        page.once('dialog', (dialog) => void dialog.accept());
        await page.click('#purge-all');
        await page.locator('.toast').filter({ hasText: 'Purged 1 rejected message(s).' }).waitFor({ timeout: 10_000 });
      } finally {
        for (const name of [dlq, source]) await app.connection.ensure((channel) => channel.deleteQueue(name)).catch(() => undefined);
      }
      return;
    }
    // Dead letters (Redis keeps them in _kq.dead): a task nobody has is rejected, listed with its reason, purged.
    const unknown = await app.sendTask('ui.nobody_has_this');
    await page.goto(`${dashboard.url}/#/dead-letters`);
    const letter = page.locator('#dead-letters tbody tr', { hasText: unknown.id });
    // The page redraws on the live feed's next change; a hashchange asks for it now (the rejection may be quiet).
    const redraw = "window.dispatchEvent(new HashChangeEvent('hashchange'))";
    await expect
      .poll(
        async () => {
          await page.evaluate(redraw);
          return letter.count();
        },
        { timeout: 15_000 },
      )
      .toBe(1);
    expect(await letter.textContent()).toContain('ui.nobody_has_this');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('#purge-all');
    await page.locator('.toast').filter({ hasText: /Purged \d+ rejected message/ }).waitFor({ timeout: 10_000 });
  }, 40_000);
});
