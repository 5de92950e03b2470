import type { FastifyInstance, FastifyRequest } from 'fastify';

/** Methods that only read: everything else (the control routes, re-send, purge, apply) changes the fleet. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses cross-site requests that would change something (CSRF): a page on another site cannot make a browser that
 * is signed in to the dashboard (or can reach it on 127.0.0.1) revoke, terminate, shut down, purge or send tasks.
 *
 * A browser marks every such request: `Sec-Fetch-Site` says whether it comes from the page's own origin, and `Origin`
 * (or, without it, `Referer`) names the page's origin, which must be the dashboard's own — its scheme and host as
 * this request reached it, through the proxy's `X-Forwarded-Proto`/`X-Forwarded-Host` when fastify's `trustProxy` is
 * on. A request without any of them is not a browser's cross-site one (curl, Flower's API clients) and goes through.
 * Also forbids framing the pages (clickjacking: a hidden frame whose buttons the user is tricked into clicking).
 */
export function registerCrossSiteGuard(server: FastifyInstance, options: { trustProxy: boolean }): void {
  server.addHook('onRequest', (request, reply, done) => {
    const refusal = SAFE_METHODS.has(request.method) ? undefined : crossSiteRefusal(request, options.trustProxy);
    if (refusal) {
      void reply.code(403).send({ error: refusal });
      return;
    }
    done();
  });
  server.addHook('onSend', (_request, reply, payload, done) => {
    void reply.header('content-security-policy', "frame-ancestors 'none'").header('x-frame-options', 'DENY').header('x-content-type-options', 'nosniff');
    done(null, payload);
  });
}

/** Why a state-changing request is refused, or undefined when it comes from the dashboard's own pages (or no browser). */
function crossSiteRefusal(request: FastifyRequest, trustProxy: boolean): string | undefined {
  const fetchSite = header(request, 'sec-fetch-site');
  const origin = header(request, 'origin');
  const referer = header(request, 'referer');
  if (fetchSite === undefined && origin === undefined && referer === undefined) return undefined;
  const own = ownOrigin(request);
  const from = origin ?? (referer === undefined ? undefined : originOf(referer));
  const hint = trustProxy
    ? 'the proxy must send X-Forwarded-Proto and X-Forwarded-Host (or pass the Host header on)'
    : 'behind a reverse proxy (TLS, another host name), start the dashboard with --trust-proxy (trustProxy: true) so the X-Forwarded-Proto and X-Forwarded-Host it sends count';
  if (from !== undefined && from !== own) {
    return `Refused a cross-site request: it comes from ${from}, not from this dashboard (${own}). Use the dashboard's own pages; ${hint}.`;
  }
  if (fetchSite === 'cross-site' || fetchSite === 'same-site') {
    return `Refused a cross-site request: the browser says it comes from another site (Sec-Fetch-Site: ${fetchSite}). Use the dashboard's own pages.`;
  }
  return undefined;
}

/** The dashboard's origin as the browser sees it: this request's scheme and host (the proxy's when trusted). */
function ownOrigin(request: FastifyRequest): string {
  return originOf(`${request.protocol}://${request.host}`);
}

/** `https://Kq.example.com:443/flower/` → `https://kq.example.com`; anything unparsable (`null`) stays as it is. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
