// The UI in a real browser (Chromium through playwright-core): the workers page lists a live worker, a task sent
// while the tasks page is open appears without a reload, its page shows its result and timeline, and a worker
// action answers with Flower's message.
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { App, Logger, type Worker } from '@kq/worker';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dashboard } from '../src/index';

const CHROMIUM = '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  if (process.env['KQ_REQUIRE_BROKERS'] === '1') throw new Error(`${CHROMIUM} is missing; KQ_REQUIRE_BROKERS=1 makes that a failure. Install: apt-get install -y chromium`);
  console.warn(`[kq] skipping the dashboard browser test: ${CHROMIUM} is missing (apt-get install -y chromium)`);
}
const redisUp = await brokerReachable('redis');
const quiet = new Logger('test', { level: 'critical', sink: () => undefined });

describe.skipIf(!haveChromium || !redisUp)('the dashboard in Chromium', () => {
  const ns = `kqui${randomUUID().slice(0, 8)}`;
  const queue = `${ns}.q`;
  const REDIS = `${brokerUrls.redis}/7`;
  const hostname = `ui@${ns}`;
  let app: App;
  let worker: Worker;
  let dashboard: Dashboard;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    app = new App('dash-ui', { broker: REDIS, backend: REDIS, taskDefaultQueue: queue, controlExchange: ns, eventExchange: `${ns}.ev` });
    app.task('ui.add', (_ctx, x: number, y: number) => x + y);
    worker = app.worker({ queues: [queue], hostname, logger: quiet, cluster: { taskEvents: true, heartbeatInterval: 0.5, mingle: false, gossip: false } });
    await worker.start();
    dashboard = new Dashboard({ app: new App('dash', { broker: REDIS, backend: REDIS, controlExchange: ns, eventExchange: `${ns}.ev` }), port: 0, logger: quiet, inspectTimeoutMs: 500 });
    await dashboard.start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
    page = await browser.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
    await dashboard?.app.close();
    await worker?.stop();
    await app?.connection.ensure((channel) => channel.deleteQueue(queue)).catch(() => undefined);
    await app?.close();
  });

  it('shows the worker online, with its pool and queue, and both charts', async () => {
    await page.goto(`${dashboard.url}/#/workers`);
    const row = page.locator(`tr[data-worker="${hostname}"]`);
    await row.waitFor({ timeout: 15_000 });
    await expect.poll(async () => row.locator('td').nth(1).textContent(), { timeout: 15_000 }).toBe('online');
    await expect.poll(async () => row.textContent(), { timeout: 15_000 }).toContain(queue);
    expect(await page.locator('.uplot').count()).toBe(2);
  }, 40_000);

  it('a task sent while the tasks page is open appears on it without a reload; its page shows result and timeline', async () => {
    await page.goto(`${dashboard.url}/#/tasks`);
    await page.locator('#tasks').waitFor();
    const result = await app.sendTask('ui.add', [20, 22]);
    expect(await result.get({ timeout: 10_000 })).toBe(42);
    const link = page.locator(`a[href="#/task/${result.id}"]`);
    await link.waitFor({ timeout: 15_000 });
    await expect.poll(async () => page.locator('#tasks tbody tr', { has: link }).locator('.state').textContent(), { timeout: 15_000 }).toBe('SUCCESS');
    await link.click();
    await page.getByText('Timeline').waitFor();
    const details = await page.locator('dl').textContent();
    expect(details).toContain(result.id);
    expect(details).toContain('42');
    expect(await page.locator('table').last().textContent()).toMatch(/received.*started.*succeeded/s);
  }, 40_000);

  it("a worker action from its page gets Flower's answer", async () => {
    await page.goto(`${dashboard.url}/#/worker/${encodeURIComponent(hostname)}`);
    await page.locator('form[data-act="grow"] button').click();
    await page.locator('.toast').filter({ hasText: `Growing '${hostname}' worker's pool by 1` }).waitFor({ timeout: 10_000 });
  }, 30_000);
});
