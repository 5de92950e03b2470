// The dashboard refuses cross-site requests that change something (CSRF), answers its own pages' requests, also
// behind a TLS proxy at a path prefix when told to trust it, forbids being framed, and without authentication answers
// only at IP addresses and localhost (DNS rebinding). Through fastify's inject, on
// an in-memory broker: nothing here needs a server.
import type { MailboxReply } from '@kq/core';
import { App, Logger } from '@kq/worker';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Dashboard } from '../src/index';
import { buildServer } from '../src/http/server';

const quiet = new Logger('test', { level: 'critical', sink: () => undefined });
const servers: FastifyInstance[] = [];

async function dashboardServer(options: { urlPrefix?: string; trustProxy?: boolean; basicAuth?: string[] } = {}): Promise<{ server: FastifyInstance; revoke: ReturnType<typeof vi.fn> }> {
  const dashboard = new Dashboard({ app: new App('dash-csrf'), logger: quiet });
  const revoke = vi.fn(async (): Promise<MailboxReply[]> => []);
  dashboard.app.control.revoke = revoke;
  const server = await buildServer(dashboard, { basicAuth: options.basicAuth ?? [], urlPrefix: options.urlPrefix ?? '', trustProxy: options.trustProxy ?? false });
  servers.push(server);
  return { server, revoke };
}

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

const HOST = '127.0.0.1:5555';

describe('cross-site requests', () => {
  it('a POST from another site is refused (403, saying why) and does nothing; from the page itself it works', async () => {
    const { server, revoke } = await dashboardServer();
    const refused = await server.inject({ method: 'POST', url: '/api/task/revoke/t1', headers: { host: HOST, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json<{ error: string }>().error).toMatch(/^Refused a cross-site request: it comes from https:\/\/evil\.example, not from this dashboard \(http:\/\/127\.0\.0\.1:5555\)/);
    expect(revoke).not.toHaveBeenCalled();

    const own = await server.inject({ method: 'POST', url: '/api/task/revoke/t1', headers: { host: HOST, origin: `http://${HOST}`, 'sec-fetch-site': 'same-origin' } });
    expect([own.statusCode, own.json()]).toEqual([200, { message: "Revoked 't1'" }]);
    expect(revoke).toHaveBeenCalledTimes(1);
  });

  it('a client that is no browser (no Origin, Referer or Sec-Fetch-Site: curl, Flower API scripts) goes through', async () => {
    const { server, revoke } = await dashboardServer();
    const reply = await server.inject({ method: 'POST', url: '/api/task/revoke/t2', headers: { host: HOST } });
    expect(reply.statusCode).toBe(200);
    expect(revoke).toHaveBeenCalledTimes(1);
  });

  it.each([
    ['a Referer from another site (no Origin)', { referer: 'https://evil.example/page' }],
    ['Origin: null (a sandboxed frame, a redirect)', { origin: 'null' }],
    ['Sec-Fetch-Site: cross-site alone', { 'sec-fetch-site': 'cross-site' }],
    ['Sec-Fetch-Site: same-site (a sibling sub-domain)', { 'sec-fetch-site': 'same-site' }],
    ['the same host on another port', { origin: 'http://127.0.0.1:8080' }],
    ['the same host over plain HTTP when the page is HTTPS', { origin: 'https://127.0.0.1:5555' }],
  ])('refuses %s', async (_what, headers: Record<string, string>) => {
    const { server, revoke } = await dashboardServer();
    const reply = await server.inject({ method: 'POST', url: '/api/task/revoke/t3', headers: { host: HOST, ...headers } });
    expect(reply.statusCode).toBe(403);
    expect(reply.json<{ error: string }>().error).toMatch(/^Refused a cross-site request/);
    expect(revoke).not.toHaveBeenCalled();
  });

  it('every route that changes something is guarded: revoke, terminate, abort, shutdown, pool, rate and time limits, consumers, apply, send again, dead letters', async () => {
    const { server } = await dashboardServer();
    const routes = [
      '/api/task/revoke/t?terminate=1',
      '/api/task/abort/t',
      '/api/worker/shutdown/w',
      '/api/worker/pool/restart/w',
      '/api/worker/pool/grow/w',
      '/api/worker/pool/shrink/w',
      '/api/worker/pool/autoscale/w',
      '/api/worker/queue/add-consumer/w',
      '/api/worker/queue/cancel-consumer/w',
      '/api/task/rate-limit/t',
      '/api/task/timeout/t',
      '/api/task/apply/t',
      '/api/task/async-apply/t',
      '/api/task/send-task/t',
      '/dashboard/task/t/resend',
      '/dashboard/dead-letters/requeue',
      '/dashboard/dead-letters/purge',
    ];
    for (const url of routes) {
      const reply = await server.inject({ method: 'POST', url, headers: { host: HOST, origin: 'https://evil.example' } });
      expect([url, reply.statusCode]).toEqual([url, 403]);
    }
    // other methods than POST too (none is routed: still refused before routing)
    expect((await server.inject({ method: 'DELETE', url: '/api/task/revoke/t', headers: { host: HOST, origin: 'https://evil.example' } })).statusCode).toBe(403);
  });

  it('reads are not refused (the browser keeps another site from reading the reply)', async () => {
    const { server } = await dashboardServer();
    const reply = await server.inject({ method: 'GET', url: '/api/workers', headers: { host: HOST, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' } });
    expect(reply.statusCode).toBe(200);
  });
});

describe('behind a reverse proxy with TLS at a path prefix', () => {
  const proxied = { host: HOST, 'x-forwarded-proto': 'https', 'x-forwarded-host': 'kq.example.com', origin: 'https://kq.example.com', 'sec-fetch-site': 'same-origin' };

  it('with trustProxy, the page at https://kq.example.com/flower/ revokes', async () => {
    const { server, revoke } = await dashboardServer({ urlPrefix: '/flower', trustProxy: true });
    const reply = await server.inject({ method: 'POST', url: '/flower/api/task/revoke/t4', headers: proxied });
    expect([reply.statusCode, reply.json()]).toEqual([200, { message: "Revoked 't4'" }]);
    expect(revoke).toHaveBeenCalledTimes(1);
    // a proxy that passes the Host header on and sets only X-Forwarded-Proto works too
    const hostKept = await server.inject({ method: 'POST', url: '/flower/api/task/revoke/t4', headers: { host: 'kq.example.com', 'x-forwarded-proto': 'https', origin: 'https://kq.example.com' } });
    expect(hostKept.statusCode).toBe(200);
    // a page on plain HTTP of the same host is another origin
    const downgraded = await server.inject({ method: 'POST', url: '/flower/api/task/revoke/t4', headers: { ...proxied, origin: 'http://kq.example.com' } });
    expect(downgraded.statusCode).toBe(403);
  });

  it('without trustProxy the forwarded headers do not count: refused, saying to pass --trust-proxy', async () => {
    const { server, revoke } = await dashboardServer({ urlPrefix: '/flower' });
    const reply = await server.inject({ method: 'POST', url: '/flower/api/task/revoke/t5', headers: proxied });
    expect(reply.statusCode).toBe(403);
    expect(reply.json<{ error: string }>().error).toContain('--trust-proxy');
    expect(revoke).not.toHaveBeenCalled();
  });

  it('a client that forges X-Forwarded-Host without trustProxy cannot pass as the page', async () => {
    const { server } = await dashboardServer();
    const reply = await server.inject({ method: 'POST', url: '/api/task/revoke/t6', headers: { host: HOST, 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https', origin: 'https://evil.example' } });
    expect(reply.statusCode).toBe(403);
  });
});

describe('framing', () => {
  it('every page and reply forbids being framed (clickjacking) and content sniffing', async () => {
    const { server } = await dashboardServer({ urlPrefix: '/flower' });
    for (const url of ['/flower/', '/flower/task/t1', '/flower/api/workers', '/flower/nothing-here']) {
      const reply = await server.inject({ method: 'GET', url, headers: { host: HOST } });
      expect([url, reply.headers['content-security-policy'], reply.headers['x-frame-options'], reply.headers['x-content-type-options']]).toEqual([url, "frame-ancestors 'none'", 'DENY', 'nosniff']);
    }
  });
});

describe('DNS rebinding', () => {
  it('without authentication, a request for a host name (a rebound one) is refused, saying what to do; IP addresses and localhost are answered', async () => {
    const { server, revoke } = await dashboardServer();
    for (const host of ['attacker.example:5555', 'attacker.example']) {
      const read = await server.inject({ method: 'GET', url: '/api/tasks', headers: { host } });
      expect(read.statusCode).toBe(403);
      expect(read.json<{ error: string }>().error).toMatch(/^Refused a request for the host name "attacker\.example": .*DNS rebinding.*KQ_DASHBOARD_AUTH or --auth-file, or behind a reverse proxy pass --trust-proxy\.$/);
    }
    // the page's own origin, as the browser sees it after the rebinding: its Origin matches its Host
    const act = await server.inject({ method: 'POST', url: '/api/task/revoke/t7', headers: { host: 'attacker.example:5555', origin: 'http://attacker.example:5555' } });
    expect(act.statusCode).toBe(403);
    expect(revoke).not.toHaveBeenCalled();
    for (const host of ['127.0.0.1:5555', 'localhost:5555', '[::1]:5555', '10.1.2.3:5555', 'dash.localhost']) {
      expect([host, (await server.inject({ method: 'GET', url: '/api/tasks', headers: { host } })).statusCode]).toEqual([host, 200]);
    }
    // probes and scrapers that use a service name: the health check and the metrics hold no secret
    for (const url of ['/healthcheck', '/metrics']) expect([url, (await server.inject({ method: 'GET', url, headers: { host: 'kq-dashboard:5555' } })).statusCode]).toEqual([url, 200]);
  });

  it('with basic auth (the browser has no credentials for a rebound name) or behind a trusted proxy, a host name is answered', async () => {
    const { server: guarded } = await dashboardServer({ basicAuth: ['admin:s3cret'] });
    const authorization = `Basic ${Buffer.from('admin:s3cret').toString('base64')}`;
    expect((await guarded.inject({ method: 'GET', url: '/api/tasks', headers: { host: 'kq.example.com' } })).statusCode).toBe(401);
    expect((await guarded.inject({ method: 'GET', url: '/api/tasks', headers: { host: 'kq.example.com', authorization } })).statusCode).toBe(200);
    const { server: proxied } = await dashboardServer({ trustProxy: true });
    expect((await proxied.inject({ method: 'GET', url: '/api/tasks', headers: { host: 'kq.example.com', 'x-forwarded-proto': 'https' } })).statusCode).toBe(200);
  });
});
