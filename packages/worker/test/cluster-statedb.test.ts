// Revokes survive restarts (--statedb): the state file is written atomically on stop and periodically, loaded at
// start (clock adjusted, revoked merged and rebased), and a damaged file never keeps a worker down.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LamportClock, LimitedSet } from '@kq/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterSteps } from '../src/cluster/cluster-steps';
import { StateDb, parseStateFile } from '../src/cluster/state-db';
import { memoryApp, memoryBrokerName, recordingLogger, waitFor } from './fixtures/cluster/helpers';

describe('state file', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kq-statedb-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a revoke survives a worker restart: the new worker skips the task', async () => {
    const path = join(dir, 'nested', 'worker.state');
    const broker = memoryBrokerName('statedb');
    const app1 = memoryApp(broker, { backend: `memory://${broker}` });
    const ran: string[] = [];
    app1.task('job', (ctx) => void ran.push(ctx.request.id));
    const worker1 = app1.worker({ hostname: 's1@test', logger: recordingLogger().logger, steps: clusterSteps({ statedb: path, heartbeatInterval: 60 }) });
    await worker1.start();
    await app1.control.revoke('revoked-before-restart');
    await waitFor(() => worker1.state.revoked.has('revoked-before-restart'), 5000, 'the revoke');
    app1.clock.adjust(700);
    await worker1.stop();
    await app1.close();
    const saved = parseStateFile(readFileSync(path, 'utf8'));
    expect(saved.clock).toBeGreaterThan(700);
    expect(Object.keys(saved.revoked)).toContain('revoked-before-restart');
    expect(readdirSync(join(dir, 'nested')).filter((name) => name.includes('.tmp-'))).toEqual([]);

    const app2 = memoryApp(broker, { backend: `memory://${broker}` });
    app2.task('job', (ctx) => void ran.push(ctx.request.id));
    const log = recordingLogger();
    const worker2 = app2.worker({ hostname: 's2@test', logger: log.logger, steps: clusterSteps({ statedb: path, heartbeatInterval: 60 }) });
    await worker2.start();
    expect(app2.clock.value).toBeGreaterThan(saved.clock);
    expect(worker2.state.revoked.has('revoked-before-restart')).toBe(true);
    expect(log.messages().some((m) => m.startsWith('statedb: loaded 1 revoked task(s)'))).toBe(true);
    const skipped = await app2.sendTask('job', [], {}, { taskId: 'revoked-before-restart' });
    const ok = await app2.sendTask('job', [], {}, { taskId: 'runs' });
    await ok.get({ timeout: 5000 });
    expect(await skipped.state()).toBe('REVOKED');
    expect(ran).toEqual(['runs']);
    await worker2.stop();
    await app2.close();
  });

  it("rebases monotonic timestamps by the wall time that passed, and drops what expired meanwhile", async () => {
    const path = join(dir, 'rebase.state');
    const monotonicNow = Number(process.hrtime.bigint()) / 1e9;
    // Saved "an hour ago" on a host whose monotonic clock read 50 then (it rebooted since).
    writeFileSync(path, JSON.stringify({
      format: 'kq-statedb',
      version: 1,
      clock: 42,
      monotonic: 50,
      wallclock: Date.now() / 1000 - 3600,
      revoked: { fresh: [49.5, 'fresh'], stale: [50 - 10_800 + 60, 'stale'] },
    }));
    const clock = new LamportClock();
    const revoked = new LimitedSet<string>({ maxlen: 100, expires: 10_800 });
    await new StateDb(path).load({ clock, revoked });
    expect(clock.value).toBe(43);
    expect([...revoked]).toEqual(['fresh']); // 'stale' was 3 h - 60 s old when saved, an hour ago
    const timestamp = revoked.toWire()['fresh']?.[0] as number;
    expect(Math.abs(timestamp - (monotonicNow - 3600 - 0.5))).toBeLessThan(5);
  });

  it('moves a damaged file aside and starts without it; writes are atomic', async () => {
    const path = join(dir, 'broken.state');
    writeFileSync(path, '{"format": "kq-statedb", "version": 1, "clock": "x"');
    const log = recordingLogger();
    const revoked = new LimitedSet<string>();
    expect(await new StateDb(path).load({ clock: new LamportClock(), revoked }, log.logger)).toBeUndefined();
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(dir).some((name) => name.startsWith('broken.state.corrupt-'))).toBe(true);
    expect(log.messages()[0]).toMatch(/^statedb: the state file is not valid JSON/);

    const db = new StateDb(path);
    revoked.add('x');
    await Promise.all([db.save({ clock: new LamportClock(), revoked }), db.save({ clock: new LamportClock(5), revoked })]);
    expect(parseStateFile(readFileSync(path, 'utf8')).clock).toBe(6);
    expect(() => parseStateFile('{"format": "other"}')).toThrow(/not a kq state file/);
    expect(() => parseStateFile(JSON.stringify({ format: 'kq-statedb', version: 9, clock: 1, monotonic: 1, wallclock: 1, revoked: {} }))).toThrow(/version 9/);
  });
});
