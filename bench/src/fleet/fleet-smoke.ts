// CI's fleet smoke (`pnpm --filter @kq/bench fleet-smoke`, under a minute): 5 and then 20 kq workers on a private
// redis-server, without the dashboard (its inspect every 30 s would land in one window and not the other); fails if
// the idle traffic per worker grows with the fleet. Redis counts no messages delivered, so the measure is what it
// sends per worker per second (bytes): heartbeats delivered to the watchers, kq's notices, the workers' polls. Under
// Celery's Gossip each worker receives every other's heartbeats, and this grows about 3× from 5 to 20 workers; it
// must stay within ALLOWED_GROWTH.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireRunLock } from '../run-lock';
import { installFleetExitHooks } from './fleet-processes';
import { runFleet, type FleetRunResult } from './fleet-run';
import { PrivateRedis } from './private-brokers';

/** Per-worker idle traffic at N = 20 over N = 5: at most this. */
const ALLOWED_GROWTH = 1.5;
const SIZES = [5, 20] as const;

const log = (line: string): void => void process.stderr.write(`${line}\n`);
acquireRunLock('fleet smoke', join(tmpdir(), 'kqbench-fleet.lock'));
installFleetExitHooks();
setTimeout(() => {
  log('fleet smoke: over 3 minutes, stopping');
  process.exit(2);
}, 180_000).unref();

const port = 17_600 + Math.floor(Math.random() * 300);
const redis = new PrivateRedis(port);
await redis.start();
const results: FleetRunResult[] = [];
try {
  for (const size of SIZES) {
    results.push(
      await runFleet({ system: 'kq', broker: redis, size, idleSeconds: 8, settleSeconds: 4, batch: 10, failure: false, dashboardPort: null, log }),
    );
  }
} finally {
  await redis.destroy();
}
const [small, large] = results as [FleetRunResult, FleetRunResult];
const perWorker = (result: FleetRunResult): number => result.sentPerSecond / result.size;
const growth = perWorker(large) / perWorker(small);
log(
  `idle traffic per worker: ${perWorker(small).toFixed(0)} B/s at N = ${small.size}, ${perWorker(large).toFixed(0)} B/s at N = ${large.size}: ` +
    `${growth.toFixed(2)}× (allowed ${ALLOWED_GROWTH}×)`,
);
const missing = results.filter((result) => result.ready < result.size || result.pingReplies < result.size);
if (missing.length > 0) {
  log(`not every worker started and answered ping: ${missing.map((result) => `${result.ready}/${result.size} ready, ${result.pingReplies} pings`).join('; ')}`);
  process.exit(1);
}
process.exit(growth <= ALLOWED_GROWTH ? 0 : 1);
