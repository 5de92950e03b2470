import { afterEach, describe, expect, it, vi } from 'vitest';
import { startRedisClusterOrSkip } from '../src/redis-cluster';

// The gate of the cluster suites when no cluster can start (here: no redis-server on the PATH). A started cluster
// is what packages/redis/test/cluster-smoke.test.ts and `pnpm test:clusters` use.
describe('startRedisClusterOrSkip without redis-server', () => {
  const path = process.env['PATH'];
  const required = process.env['KQ_REQUIRE_BROKERS'];

  afterEach(() => {
    process.env['PATH'] = path;
    if (required === undefined) delete process.env['KQ_REQUIRE_BROKERS'];
    else process.env['KQ_REQUIRE_BROKERS'] = required;
    vi.restoreAllMocks();
  });

  it('skips with one line saying why', async () => {
    process.env['PATH'] = '/nonexistent';
    delete process.env['KQ_REQUIRE_BROKERS'];
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    await expect(startRedisClusterOrSkip()).resolves.toBeUndefined();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toMatch(/skipping Redis Cluster tests: .*cannot run redis-server/);
  });

  it('fails instead under KQ_REQUIRE_BROKERS=1', async () => {
    process.env['PATH'] = '/nonexistent';
    process.env['KQ_REQUIRE_BROKERS'] = '1';
    await expect(startRedisClusterOrSkip()).rejects.toThrow(/KQ_REQUIRE_BROKERS=1 makes this a failure/);
  });
});
