import { timingSafeEqual } from 'node:crypto';
import basicAuth from '@fastify/basic-auth';
import Fastify, { type FastifyInstance } from 'fastify';
import type { DashboardView } from '../dashboard-view';
import { registerCrossSiteGuard } from './cross-site-guard';
import { registerDeadLetterRoutes } from './dead-letter-routes';
import { registerDnsRebindingGuard } from './dns-rebinding-guard';
import { registerFlowerControlRoutes } from './flower-control-routes';
import { registerFlowerTaskRoutes } from './flower-task-routes';
import { registerFlowerWorkerRoutes } from './flower-worker-routes';
import { registerTaskResendRoutes } from './task-resend-routes';
import { registerUiRoutes } from './ui-routes';

/**
 * The dashboard's HTTP server (fastify): the UI, its live feed, Flower's REST API, `/metrics` and `/healthcheck`,
 * all under `urlPrefix` when one is given (serving behind a proxy at a path, as Flower's `--url_prefix`).
 * With `basicAuth`, everything but `/healthcheck` needs one of the `user:password` pairs, as Flower's `--basic-auth`.
 * Requests that change something are refused when a browser sends them from another site (cross-site-guard.ts);
 * `trustProxy` takes the scheme and host from the proxy's X-Forwarded-Proto/X-Forwarded-Host for that check.
 * Without either, only requests to an IP address or localhost are answered (dns-rebinding-guard.ts).
 */
export async function buildServer(dashboard: DashboardView, options: { basicAuth: readonly string[]; urlPrefix: string; trustProxy: boolean }): Promise<FastifyInstance> {
  const prefix = options.urlPrefix;
  const server = Fastify({ logger: false, trustProxy: options.trustProxy, routerOptions: { ignoreTrailingSlash: true } });
  // Flower's clients send form fields (tornado reads query and body alike): parse them as fields too.
  server.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });
  if (options.basicAuth.length > 0) {
    const allowed = options.basicAuth.map((pair) => Buffer.from(pair));
    await server.register(basicAuth, {
      authenticate: { realm: 'kq dashboard' },
      validate: async (username, password) => {
        const given = Buffer.from(`${username}:${password}`);
        if (!allowed.some((pair) => pair.length === given.length && timingSafeEqual(pair, given))) throw new Error('Unauthorized');
      },
    });
    server.addHook('onRequest', (request, reply, done) => {
      if (request.url === `${prefix}/healthcheck`) return done();
      server.basicAuth(request, reply, done);
    });
  } else if (!options.trustProxy) registerDnsRebindingGuard(server, prefix);
  registerCrossSiteGuard(server, { trustProxy: options.trustProxy });
  await server.register(
    async (scoped) => {
      scoped.get('/healthcheck', async (_request, reply) => reply.type('text/plain').send('OK'));
      scoped.get('/metrics', async (_request, reply) => {
        dashboard.state.metrics.refreshOnline(dashboard.state.cluster);
        return reply.type(dashboard.state.metrics.registry.contentType).send(await dashboard.state.metrics.text());
      });
      registerFlowerWorkerRoutes(scoped, dashboard);
      registerFlowerTaskRoutes(scoped, dashboard);
      registerFlowerControlRoutes(scoped, dashboard);
      registerDeadLetterRoutes(scoped, dashboard);
      registerTaskResendRoutes(scoped, dashboard);
      registerUiRoutes(scoped, dashboard, prefix);
    },
    { prefix },
  );
  return server;
}
