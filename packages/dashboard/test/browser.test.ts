// The UI in a real browser (Chromium through playwright-core), on a mixed fleet — a kq worker and a Python Celery
// 5.2.6 worker — on Redis and on RabbitMQ: both workers appear online with both charts drawn, a task sent while the
// tasks page is open appears without a reload and is found by search, its page shows its result and timeline and
// sends it again, revoke reaches the real worker, pool grow acts on it, and the dead letters (Redis's list, a named
// RabbitMQ dead-letter queue) are listed and purged. The pages answer at Flower's paths (also under a URL prefix) and
// move between them without a reload, load with no console error or failed request, print runtimes as durations,
// and their charts' axis labels never overlap.
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

/**
 * Runs in the page before its scripts: keeps, per canvas, the box of every text drawn since it was last cleared —
 * uPlot's axis labels (titles and legends are HTML) — as the canvas measures them, so overlaps can be checked.
 */
const RECORD_CANVAS_TEXT = `(() => {
  const proto = CanvasRenderingContext2D.prototype;
  const clearRect = proto.clearRect;
  const fillText = proto.fillText;
  proto.clearRect = function (...args) { this.canvas.kqTexts = []; return clearRect.apply(this, args); };
  proto.fillText = function (text, x, y, ...rest) {
    const m = this.measureText(text);
    (this.canvas.kqTexts ||= []).push({ text: String(text), left: x - m.actualBoundingBoxLeft, right: x + m.actualBoundingBoxRight, top: y - m.actualBoundingBoxAscent, bottom: y + m.actualBoundingBoxDescent });
    return fillText.call(this, text, x, y, ...rest);
  };
})()`;

/** Per chart (by its card's id), the labels it drew and any two whose boxes (2 px apart at least) intersect. */
const CHART_LABELS = `[...document.querySelectorAll('.uplot canvas')].map((canvas) => {
  const texts = canvas.kqTexts || [];
  const overlaps = [];
  for (let i = 0; i < texts.length; i++)
    for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i], b = texts[j];
      if (a.left < b.right + 2 && b.left < a.right + 2 && a.top < b.bottom + 2 && b.top < a.bottom + 2) overlaps.push(a.text + ' / ' + b.text);
    }
  return { chart: canvas.closest('.card').id, width: canvas.width, labels: texts.map((t) => t.text), overlaps };
})`;

/** A duration as the page prints it: 109 µs, 12.3 ms, 1.52 s, 2 min 5 s. */
const DURATION = /^(\d{1,3}(\.\d{1,2})? (µs|ms|s)|\d+ min \d{1,2} s)$/;
const CLOCK = /^\d\d:\d\d(:\d\d)?$/;

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
  /** Console errors, page errors and failed or refused requests, as they happen. */
  const problems: string[] = [];
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
    await page.addInitScript(RECORD_CANVAS_TEXT);
    page.on('console', (message) => void (message.type() === 'error' && problems.push(`console: ${message.text()} (${message.location().url})`)));
    page.on('pageerror', (error) => void problems.push(`page error: ${error.message}`));
    page.on('response', (response) => void (response.status() >= 400 && problems.push(`${response.status()}: ${response.url()}`)));
    page.on('requestfailed', (request) => {
      // Leaving a page cancels what it was fetching (its live feed, a redraw under way): not a failure.
      if (request.failure()?.errorText === 'net::ERR_ABORTED') return;
      problems.push(`failed: ${request.url()} (${request.failure()?.errorText ?? '?'})`);
    });
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
    await page.goto(`${dashboard.url}/workers`);
    for (const host of python ? [hostname, pyHost] : [hostname]) {
      const row = page.locator(`tr[data-worker="${host}"]`);
      await row.waitFor({ timeout: 20_000 });
      await expect.poll(async () => row.locator('td').nth(1).textContent(), { timeout: 20_000 }).toBe('online');
    }
    await expect.poll(async () => page.locator(`tr[data-worker="${hostname}"]`).textContent(), { timeout: 15_000 }).toContain(queue);
    // uPlot draws on canvases: two charts, each with its canvas sized
    await expect.poll(async () => page.locator('.uplot canvas').count()).toBe(2);
    // A live update redraws the page (charts destroyed and drawn again): a canvas read between the two is detached.
    await expect.poll(async () => (await page.locator('.uplot canvas').first().boundingBox())?.width ?? 0).toBeGreaterThan(100);
    await shot('workers');
  }, 60_000);

  it.skipIf(skip)("answers at Flower's page paths (old #/ links too) and moves between pages without a reload, under a URL prefix too; no console error or failed request", async () => {
    problems.length = 0;
    const prefixed = new Dashboard({ app: new App('dash-ui-prefix', { broker, backend, controlExchange: ns, eventExchange: `${ns}.ev` }), port: 0, logger: quiet, inspectTimeoutMs: 500, urlPrefix: 'flower' });
    await prefixed.start();
    try {
      const done = await app.sendTask('ui.add', [3, 4]);
      expect(await done.get({ timeout: 10_000 })).toBe(7);
      for (const seen of [dashboard, prefixed]) await expect.poll(() => seen.state.task(done.id)?.state, { timeout: 10_000 }).toBe('SUCCESS');
      const host = encodeURIComponent(hostname);
      for (const base of [dashboard.url, prefixed.url]) {
        const pages: Array<[path: string, shows: string]> = [
          ['/', `tr[data-worker="${hostname}"]`],
          ['/workers', `tr[data-worker="${hostname}"]`],
          [`/worker/${host}`, `h1:text-is("${hostname}")`],
          ['/tasks', `#tasks a[href="task/${done.id}"]`],
          [`/task/${done.id}`, `dd:text-is("${done.id}")`],
          ['/broker', 'a.active[data-nav="queues"]'],
          // RabbitMQ's needs a dead-letter queue named first (a 400 until then): that page is checked on Redis
          ...(label === 'Redis' ? [['/dead-letters', '#dead-letters'] as [string, string]] : []),
        ];
        for (const [path, shows] of pages) {
          await page.goto(`${base}${path}`);
          await page.locator(shows).waitFor({ timeout: 10_000 });
        }
      }
      // A bookmark of the page's old #/ URLs lands on the same page, at its path.
      await page.goto(`${dashboard.url}/#/task/${done.id}`);
      await page.locator(`dd:text-is("${done.id}")`).waitFor({ timeout: 10_000 });
      expect(page.url()).toBe(`${dashboard.url}/task/${done.id}`);

      // Links move between pages in place (history API): the page is never reloaded, and Back goes back.
      await page.goto(`${prefixed.url}/tasks`);
      await page.evaluate('window.kqSamePage = true');
      await page.locator(`#tasks a[href="task/${done.id}"]`).click();
      await page.locator(`dd:text-is("${done.id}")`).waitFor({ timeout: 10_000 });
      expect(page.url()).toBe(`${prefixed.url}/task/${done.id}`);
      await page.locator('nav a[data-nav="workers"]').click();
      await page.locator(`tr[data-worker="${hostname}"] a`).click();
      await page.locator(`h1:text-is("${hostname}")`).waitFor({ timeout: 10_000 });
      expect(page.url()).toBe(`${prefixed.url}/worker/${host}`);
      await page.goBack();
      await page.locator(`tr[data-worker="${hostname}"]`).waitFor({ timeout: 10_000 });
      expect(await page.evaluate('window.kqSamePage')).toBe(true);
    } finally {
      await prefixed.close();
      await prefixed.app.close();
    }
    expect(problems).toEqual([]);
  }, 60_000);

  it.skipIf(skip)("prints runtimes as durations: the tasks table, a task's page, the runtime chart's axis and legend", async () => {
    const done = await app.sendTask('ui.add', [5, 6]);
    await done.get({ timeout: 10_000 });
    await expect.poll(() => dashboard.state.task(done.id)?.state, { timeout: 10_000 }).toBe('SUCCESS');
    await page.goto(`${dashboard.url}/tasks`);
    await page.locator(`#tasks a[href="task/${done.id}"]`).waitFor({ timeout: 10_000 });
    const runtimes = (await page.locator('#tasks tbody tr td:nth-child(7)').allTextContents()).filter(Boolean);
    expect(runtimes.length).toBeGreaterThan(0);
    for (const runtime of runtimes) expect(runtime).toMatch(DURATION);
    await page.goto(`${dashboard.url}/task/${done.id}`);
    expect(await page.locator('dt:text-is("runtime") + dd').textContent()).toMatch(DURATION);

    await page.goto(`${dashboard.url}/workers`);
    await page.waitForFunction(`[...document.querySelectorAll('#chart-runtime canvas')].some((c) => c.kqTexts && c.kqTexts.length > 0)`);
    const charts = (await page.evaluate(CHART_LABELS)) as Array<{ chart: string; labels: string[] }>;
    const axis = charts.find((chart) => chart.chart === 'chart-runtime')?.labels.filter((text) => !CLOCK.test(text)) ?? [];
    expect(axis.length).toBeGreaterThan(0);
    for (const label of axis) expect(label).toMatch(DURATION);
    // The legend shows the values under the cursor: moved from the right edge until it is over a second with tasks.
    const box = await page.locator('#chart-runtime .u-over').boundingBox();
    const values = page.locator('#chart-runtime .u-legend .u-value');
    let legend: string[] = [];
    for (let dx = 1; box && dx < box.width && !legend.slice(1).some((value) => value !== '--'); dx++) {
      await page.mouse.move(box.x + box.width - dx, box.y + box.height / 2);
      legend = await values.allTextContents();
    }
    expect(legend[0]).toMatch(CLOCK);
    expect(legend.slice(1).filter((value) => value !== '--').length).toBeGreaterThan(0);
    for (const value of legend.slice(1)) if (value !== '--') expect(value).toMatch(DURATION);
  }, 40_000);

  it.skipIf(skip)("its charts' axis labels never overlap, whatever the width", async () => {
    // uPlot's default time axis wrote the date under the first tick, wider than the ticks' spacing: it ran into the
    // next minute's label when the first tick was a half minute. The charts' 5 minutes are shifted so that it is.
    await page.route('**/dashboard/overview', async (route) => {
      const response = await route.fetch();
      const body = (await response.json()) as { throughput: Array<{ t: number }> };
      const shift = (((1 - (body.throughput[0]?.t ?? 1)) % 60) + 60) % 60;
      for (const point of body.throughput) point.t += shift;
      await route.fulfill({ response, json: body });
    });
    try {
      await page.goto(`${dashboard.url}/workers`);
      for (const width of [900, 1200, 1400, 1800]) {
        await page.setViewportSize({ width, height: 900 });
        // redrawn at this width: new canvases, each with its labels drawn
        await page.evaluate(`document.querySelectorAll('.uplot canvas').forEach((c) => (c.kqStale = true)); window.dispatchEvent(new PopStateEvent('popstate'))`);
        await page.waitForFunction(`(() => { const all = [...document.querySelectorAll('.uplot canvas')]; return all.length === 2 && all.every((c) => !c.kqStale && c.kqTexts && c.kqTexts.length > 0); })()`);
        const charts = (await page.evaluate(CHART_LABELS)) as Array<{ chart: string; labels: string[]; overlaps: string[] }>;
        expect(charts.map(({ chart, overlaps }) => ({ width, chart, overlaps }))).toEqual([
          { width, chart: 'chart-throughput', overlaps: [] },
          { width, chart: 'chart-runtime', overlaps: [] },
        ]);
        for (const chart of charts) expect(chart.labels.filter((text) => CLOCK.test(text)).length).toBeGreaterThanOrEqual(2);
      }
    } finally {
      await page.unroute('**/dashboard/overview');
      await page.setViewportSize({ width: 1400, height: 900 });
    }
  }, 40_000);

  it.skipIf(skip)('a task sent while the tasks page is open appears without a reload, is found by search, and its page shows its result', async () => {
    await page.goto(`${dashboard.url}/tasks`);
    await page.locator('#tasks').waitFor();
    const result = await app.sendTask('ui.add', [20, 22]);
    expect(await result.get({ timeout: 10_000 })).toBe(42);
    const link = page.locator(`a[href="task/${result.id}"]`);
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
    await page.goto(`${dashboard.url}/task/${later.id}`);
    await page.locator('#revoke').waitFor({ timeout: 15_000 });
    await page.click('#revoke');
    await page.locator('.toast').filter({ hasText: `Revoked '${later.id}'` }).waitFor({ timeout: 10_000 });
    await expect.poll(() => worker.state.revoked.has(later.id), { timeout: 10_000 }).toBe(true);

    const before = worker.pool.limit;
    await page.goto(`${dashboard.url}/worker/${encodeURIComponent(hostname)}`);
    await page.locator('form[data-act="grow"] button').click();
    await page.locator('.toast').filter({ hasText: `Growing '${hostname}' worker's pool by 1` }).waitFor({ timeout: 10_000 });
    await expect.poll(() => worker.pool.limit, { timeout: 10_000 }).toBe(before + 1);
    await shot('worker');

    // The queues page: the queue, its consumer, and the ETA task the worker holds from it (revoked, still held).
    const eta = await app.sendTask('ui.add', [2, 2], {}, { countdown: 60 });
    await expect.poll(() => worker.scheduled().some((entry) => entry.request.id === eta.id), { timeout: 10_000 }).toBe(true);
    await dashboard.inspector.inspect();
    await page.goto(`${dashboard.url}/broker`); // Flower's path for it
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
        await page.goto(`${dashboard.url}/dead-letters`);
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
    await page.goto(`${dashboard.url}/dead-letters`);
    const letter = page.locator('#dead-letters tbody tr', { hasText: unknown.id });
    // The page redraws on the live feed's next change; a popstate asks for it now (the rejection may be quiet).
    const redraw = "window.dispatchEvent(new PopStateEvent('popstate'))";
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
