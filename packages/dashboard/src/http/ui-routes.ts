import type { ServerResponse } from 'node:http';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { DashboardView } from '../dashboard-view';
import { overview } from '../overview';
import { packageRoot } from '../package-root';

const STATIC: Readonly<Record<string, readonly [file: () => string, type: string]>> = {
  'app.js': [() => join(uiDir(), 'app.js'), 'text/javascript; charset=utf-8'],
  'style.css': [() => join(uiDir(), 'style.css'), 'text/css; charset=utf-8'],
  'favicon.svg': [() => join(uiDir(), 'favicon.svg'), 'image/svg+xml'],
  // Charts are uPlot's (small, fast, canvas): served from the installed package.
  'uplot.js': [() => join(uplotDir(), 'uPlot.iife.min.js'), 'text/javascript; charset=utf-8'],
  'uplot.css': [() => join(uplotDir(), 'uPlot.min.css'), 'text/css; charset=utf-8'],
};

/**
 * Where the page is served: Flower's page paths (so bookmarks and alert links made for Flower keep working; its
 * `/broker` is the queues page) and the dashboard's own pages. Any of them is the same page, which draws the one
 * its path names.
 */
const PAGE_PATHS = ['/', '/workers', '/worker/*', '/tasks', '/task/*', '/broker', '/queues', '/dead-letters'] as const;

/**
 * The web UI: one page (workers, a worker, tasks, a task, queues — routed in the browser), its static files, the
 * overview it draws from, and `/api/live`, a server-sent-events feed that says when something changed so the page
 * refreshes what it shows without a reload.
 */
export function registerUiRoutes(server: FastifyInstance, dashboard: DashboardView, prefix: string): void {
  for (const path of PAGE_PATHS) {
    server.get(path, async (request, reply) => {
      const requested = request.url.split('?')[0] ?? '';
      // The page fetches relative URLs: under a prefix it must be served with its trailing slash.
      if (prefix && requested === prefix) return reply.redirect(`${prefix}/`);
      const html = await readFile(join(uiDir(), 'index.html'), 'utf8');
      return reply.type('text/html; charset=utf-8').send(html.replace('<head>', `<head>\n  <base href="${pageBase(requested.slice(prefix.length))}">`));
    });
  }
  server.get<{ Params: { file: string } }>('/static/:file', async (request, reply) => {
    const entry = STATIC[request.params.file];
    if (!entry) return reply.code(404).send({ error: 'not found' });
    const [file, type] = entry;
    return reply.type(type).header('cache-control', 'max-age=300').send(await readFile(file()));
  });
  server.get('/dashboard/overview', async () => overview(dashboard));

  // Open feeds are ended when the server closes: it waits for every request to end, and a page left open never would.
  const feeds = new Set<ServerResponse>();
  server.addHook('preClose', (done) => {
    for (const feed of feeds) feed.end();
    done();
  });
  server.get('/api/live', (request, reply) => {
    feeds.add(reply.raw);
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    let sent = -1;
    const tick = (): void => {
      const version = dashboard.state.version;
      if (version !== sent) {
        sent = version;
        reply.raw.write(`event: change\ndata: ${JSON.stringify({ version, events: dashboard.state.cluster.eventCount })}\n\n`);
      } else {
        reply.raw.write(': idle\n\n'); // keeps proxies from closing a quiet stream
      }
    };
    tick();
    const timer = setInterval(tick, 1000);
    request.raw.on('close', () => {
      clearInterval(timer);
      feeds.delete(reply.raw);
    });
  });
}

/**
 * The page's base, relative to the path it is served at (`/` and `/tasks` → `./`, `/worker/x` → `../`), so that its
 * relative URLs reach the dashboard's root whatever the page path — and also behind a proxy that strips a prefix.
 */
function pageBase(path: string): string {
  const depth = path.split('/').length - 2;
  return depth > 0 ? '../'.repeat(depth) : './';
}

/** The UI's files: `ui/` in the package, beside `src/` and `dist/`. */
function uiDir(): string {
  return join(packageRoot(), 'ui');
}

function uplotDir(): string {
  return dirname(createRequire(import.meta.url).resolve('uplot/dist/uPlot.iife.min.js'));
}
