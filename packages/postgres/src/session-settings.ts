/**
 * A connection string whose sessions start with these settings (`-c name=value`), kept beside any the URL's own
 * `options` parameter sets (a `search_path`, say). node-postgres lets a URL's `options` replace a pool's `options`
 * outright, so the settings are merged into the URL rather than passed beside it.
 */
export function withSessionSettings(connectionString: string, settings: Readonly<Record<string, string>>): string {
  const url = new URL(connectionString);
  const own = Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`);
  const theirs = url.searchParams.get('options');
  url.searchParams.set('options', [theirs, ...own].filter((part) => part !== null && part !== '').join(' '));
  return url.toString();
}

/**
 * Every kq statement with parameters is a short lookup by key or queue whose best plan does not depend on the values
 * sent, so prepared statements take their generic plan at once: PostgreSQL otherwise plans each call anew for five
 * calls, then keeps doing so whenever the generic plan's estimate looks worse (for the claim, every time).
 */
export const GENERIC_PLANS: Readonly<Record<string, string>> = { plan_cache_mode: 'force_generic_plan' };
