import { isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * Without authentication, answers only requests made to an IP address or `localhost`. A web page can otherwise reach
 * a dashboard on 127.0.0.1 through DNS rebinding: its own name, re-pointed at 127.0.0.1, makes the dashboard the
 * page's own origin, so the browser lets it read task arguments and results and send actions (its Origin is its
 * own name, which the request's Host matches). A rebound name cannot be an IP address; with basic auth the browser
 * has no credentials for the page's name. Behind a proxy that trusts nobody else (`trustProxy`), the proxy's host
 * name is expected, and the proxy is where to authenticate. The health check and the metrics (no secret, no action)
 * answer any name, for probes and scrapers that address the dashboard by a service name.
 */
export function registerDnsRebindingGuard(server: FastifyInstance, prefix: string): void {
  const open = new Set([`${prefix}/healthcheck`, `${prefix}/metrics`]);
  server.addHook('onRequest', (request, reply, done) => {
    if (open.has(request.url.split('?')[0] ?? '')) return done();
    const name = request.hostname.replace(/^\[|\]$/g, '');
    if (name === 'localhost' || name.endsWith('.localhost') || isIP(name) !== 0) return done();
    void reply.code(403).send({
      error:
        `Refused a request for the host name ${JSON.stringify(name)}: without authentication the dashboard answers only at an IP address or localhost, ` +
        'since a web page could reach it through a name pointed at this machine (DNS rebinding). Set KQ_DASHBOARD_AUTH or --auth-file, ' +
        'or behind a reverse proxy pass --trust-proxy.',
    });
  });
}
