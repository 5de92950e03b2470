// The fleet bench's view of where Redis's time went: `INFO commandstats` lines read into per-command costs, and the
// FLEET.md lines that list each fleet's costliest commands over its idle window.
import { describe, expect, it } from 'vitest';
import { commandCostsOf, parseInfo } from '../src/fleet/private-brokers';
import type { FleetRunResult } from '../src/fleet/fleet-run';
import { renderFleetReport } from '../src/fleet/fleet-report';

const INFO = [
  '# Commandstats',
  'cmdstat_brpop:calls=50,usec=273,usec_per_call=5.46,rejected_calls=0,failed_calls=0',
  'cmdstat_publish:calls=1200,usec=15600,usec_per_call=13.00,rejected_calls=0,failed_calls=0',
  '# Stats',
  'total_commands_processed:1250',
].join('\r\n');

describe('the fleet bench reading INFO commandstats', () => {
  it('reads calls and µs per command, and nothing else', () => {
    const costs = commandCostsOf(parseInfo(INFO));
    expect([...costs]).toEqual([
      ['brpop', { calls: 50, usec: 273 }],
      ['publish', { calls: 1200, usec: 15600 }],
    ]);
  });

  it("lists each Redis fleet's costliest commands in FLEET.md", () => {
    const row: FleetRunResult = {
      system: 'kq',
      broker: 'redis',
      size: 200,
      ready: 200,
      startMedianMs: 2000,
      startMaxMs: 3000,
      mingleMedianMs: 300,
      mingleMaxMs: 600,
      connectionsPerWorker: 3,
      idleSeconds: 30,
      brokerCpuPercent: 1.5,
      receivedPerSecond: 219,
      sentPerSecond: 350_000,
      workerCpuPercentEach: 0.14,
      workerRssMbEach: 69,
      dashboardCpuPercent: 2,
      dashboardRssMb: 115,
      pingMs: 257,
      pingReplies: 200,
      revokeMs: 277,
      revokeReplies: 200,
      failure: null,
      commandCosts: [
        { command: 'publish', callsPerSecond: 100.3, usecPerSecond: 1190 },
        { command: 'brpop', callsPerSecond: 20.2, usecPerSecond: 263 },
      ],
    };
    const report = renderFleetReport([row], { idleSeconds: 30, batch: 10 });
    expect(report).toContain('- kq, N = 200: publish 100.3/s 1190 µs, brpop 20.2/s 263 µs.');
  });
});
