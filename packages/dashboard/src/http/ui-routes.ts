import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Dashboard } from '../dashboard';
import { overview } from '../overview';
import { packageRoot } from '../package-root';

const STATIC: Readonly<Record<string, readonly [file: () => string, type: string]>> = {
  'app.js': [() => join(uiDir(), 'app.js'), 'text/javascript; charset=utf-8'],
  'style.css': [() => join(uiDir(), 'style.css'), 'text/css; charset=utf-8'],
  // Charts are uPlot's (small, fast, canvas): served from the installed package.
  'uplot.js': [() => join(uplotDir(), 'uPlot.iife.min.js'), 'text/javascript; charset=utf-8'],
  'uplot.css': [() => join(uplotDir(), 'uPlot.min.css'), 'text/css; charset=utf-8'],
};

/**
 * The web UI: one page (workers, a worker, tasks, a task, queues — routed in the browser), its static files, the
 * overview it draws from, and `/api/live`, a server-sent-events feed that says when something changed so the page
 * refreshes what it shows without a reload.
 */
export function registerUiRoutes(server: FastifyInstance, dashboard: Dashboard, prefix: string): void {
  server.get('/', async (request, reply) => {
    // The page fetches relative URLs: under a prefix it must be served with its trailing slash.
    if (prefix && request.url.split('?')[0] === prefix) return reply.redirect(`${prefix}/`);
    return reply.type('text/html; charset=utf-8').send(await readFile(join(uiDir(), 'index.html'), 'utf8'));
  });
  server.get<{ Params: { file: string } }>('/static/:file', async (request, reply) => {
    const entry = STATIC[request.params.file];
    if (!entry) return reply.code(404).send({ error: 'not found' });
    const [file, type] = entry;
    return reply.type(type).header('cache-control', 'max-age=300').send(await readFile(file()));
  });
  server.get('/dashboard/overview', async () => overview(dashboard));

  server.get('/api/live', (request, reply) => {
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
    request.raw.on('close', () => clearInterval(timer));
  });
}

/** The UI's files: `ui/` in the package, beside `src/` and `dist/`. */
function uiDir(): string {
  return join(packageRoot(), 'ui');
}

function uplotDir(): string {
  return dirname(createRequire(import.meta.url).resolve('uplot/dist/uPlot.iife.min.js'));
}
