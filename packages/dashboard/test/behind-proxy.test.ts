// The dashboard behind a real reverse proxy: HTTPS (a self-signed certificate made by openssl for the test) at
// https://localhost:<port>/flower/, forwarding to the dashboard on 127.0.0.1 as nginx does by default (its own Host,
// X-Forwarded-Proto/Host/For), with --url-prefix /flower, --trust-proxy and basic auth. In Chromium, a revoke and a
// pool grow clicked on its pages reach the worker; a form on another site that posts a revoke to it is refused.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { App, Logger, type Worker } from '@kq/worker';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dashboard } from '../src/index';

const CHROMIUM = '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  if (process.env['KQ_REQUIRE_BROKERS'] === '1') throw new Error(`${CHROMIUM} is missing; KQ_REQUIRE_BROKERS=1 makes that a failure. Install: apt-get install -y chromium`);
  console.warn(`[kq] skipping the dashboard-behind-a-proxy test: ${CHROMIUM} is missing (apt-get install -y chromium)`);
}
const haveOpenssl = spawnSync('openssl', ['version']).status === 0;
if (!haveOpenssl) {
  if (process.env['KQ_REQUIRE_BROKERS'] === '1') throw new Error('openssl is missing (it makes the proxy\'s certificate); KQ_REQUIRE_BROKERS=1 makes that a failure. Install: apt-get install -y openssl');
  console.warn('[kq] skipping the dashboard-behind-a-proxy test: openssl is missing (apt-get install -y openssl)');
}
const redisUp = await brokerReachable('redis');
const quiet = new Logger('test', { level: 'critical', sink: () => undefined });
const listening = (server: Server): Promise<number> => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

describe.skipIf(!haveChromium || !haveOpenssl || !redisUp)('the dashboard behind an HTTPS reverse proxy at /flower/', () => {
  const ns = `kqproxy${randomUUID().slice(0, 8)}`;
  const queue = `${ns}.q`;
  const hostname = `proxied@${ns}`;
  const broker = `${brokerUrls.redis}/7`;
  const credentials = { username: 'admin', password: randomUUID() };
  const dir = mkdtempSync(join(tmpdir(), 'kq-proxy-'));
  let app: App;
  let worker: Worker;
  let dashboard: Dashboard;
  let proxy: Server;
  let otherSite: Server;
  let publicUrl = '';
  let otherSiteUrl = '';
  let browser: Browser;
  let context: BrowserContext;

  beforeAll(async () => {
    app = new App('dash-proxy', { broker, backend: broker, taskDefaultQueue: queue, controlExchange: ns, eventExchange: `${ns}.ev` });
    app.task('proxy.add', (_ctx, x: number, y: number) => x + y);
    worker = app.worker({ queues: [queue], hostname, logger: quiet, concurrency: 1, cluster: { taskEvents: true, heartbeatInterval: 0.5, mingle: false, gossip: false } });
    await worker.start();
    dashboard = new Dashboard({
      app: new App('dash-proxied', { broker, backend: broker, controlExchange: ns, eventExchange: `${ns}.ev` }),
      port: 0,
      logger: quiet,
      inspectTimeoutMs: 500,
      urlPrefix: '/flower',
      trustProxy: true,
      basicAuth: [`${credentials.username}:${credentials.password}`],
    });
    const upstream = new URL(await dashboard.start());

    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    // nginx's `location /flower/ { proxy_pass http://127.0.0.1:<port>; proxy_set_header X-Forwarded-Proto $scheme; … }`:
    // the path as is, the upstream's Host, where the browser was in X-Forwarded-*; responses streamed (the live feed).
    proxy = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (request, response) => {
      if (!request.url?.startsWith('/flower/') && request.url !== '/flower') {
        response.writeHead(404).end('not proxied');
        return;
      }
      const forwarded = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: request.method,
          path: request.url,
          headers: { ...request.headers, host: upstream.host, 'x-forwarded-proto': 'https', 'x-forwarded-host': request.headers.host ?? '', 'x-forwarded-for': request.socket.remoteAddress ?? '' },
        },
        (reply) => {
          response.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.pipe(response);
        },
      );
      forwarded.on('error', () => response.writeHead(502).end());
      request.pipe(forwarded);
    });
    publicUrl = `https://localhost:${await listening(proxy)}/flower`;
    // Another site, whose page posts a revoke to the dashboard when its button is clicked (CSRF).
    otherSite = createHttpServer((request, response) => {
      const id = new URL(request.url ?? '/', 'http://x').searchParams.get('id') ?? '';
      response.writeHead(200, { 'content-type': 'text/html' }).end(`<form method="post" action="${publicUrl}/api/task/revoke/${id}"><button id="win">Win a prize</button></form>`);
    });
    otherSiteUrl = `http://127.0.0.1:${await listening(otherSite)}`;

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
    context = await browser.newContext({ ignoreHTTPSErrors: true, httpCredentials: credentials, viewport: { width: 1400, height: 900 } });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    proxy?.closeAllConnections();
    proxy?.close();
    otherSite?.close();
    await dashboard?.close();
    await dashboard?.app.close();
    await worker?.stop();
    await app?.connection.ensure((channel) => channel.deleteQueue(queue)).catch(() => undefined);
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a revoke and a pool grow clicked on its pages reach the worker', async () => {
    const page = await context.newPage();
    const refused: string[] = [];
    page.on('response', (response) => void (response.status() >= 400 && refused.push(`${response.status()} ${response.url()}`)));
    const later = await app.sendTask('proxy.add', [1, 1], {}, { countdown: 60 });
    await expect.poll(() => dashboard.state.task(later.id)?.state, { timeout: 15_000 }).toBeDefined();
    await page.goto(`${publicUrl}/task/${later.id}`);
    await page.locator('#revoke').click({ timeout: 15_000 });
    await page.locator('.toast').filter({ hasText: `Revoked '${later.id}'` }).waitFor({ timeout: 10_000 });
    await expect.poll(() => worker.state.revoked.has(later.id), { timeout: 10_000 }).toBe(true);

    const before = worker.pool.limit;
    await page.goto(`${publicUrl}/worker/${encodeURIComponent(hostname)}`);
    await page.locator('form[data-act="grow"] button').click();
    await page.locator('.toast').filter({ hasText: `Growing '${hostname}' worker's pool by 1` }).waitFor({ timeout: 10_000 });
    await expect.poll(() => worker.pool.limit, { timeout: 10_000 }).toBe(before + 1);
    expect(page.url()).toBe(`${publicUrl}/worker/${encodeURIComponent(hostname)}`);
    expect(refused).toEqual([]);
    await page.close();
  }, 60_000);

  it("a form on another site that posts a revoke is refused, though the browser sends the user's credentials", async () => {
    const target = await app.sendTask('proxy.add', [2, 2], {}, { countdown: 60 });
    const page = await context.newPage();
    await page.goto(`${otherSiteUrl}/?id=${target.id}`);
    const [reply] = await Promise.all([page.waitForResponse((response) => response.url().includes('/api/task/revoke/'), { timeout: 10_000 }), page.click('#win')]);
    expect(reply.status()).toBe(403);
    expect(((await reply.json()) as { error: string }).error).toMatch(/^Refused a cross-site request: it comes from http:\/\/127\.0\.0\.1:\d+, not from this dashboard \(https:\/\/localhost:\d+\)/);
    // a revoke would have reached the worker by now (the one above took well under this)
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(worker.state.revoked.has(target.id)).toBe(false);
    await page.close();
  }, 30_000);
});
