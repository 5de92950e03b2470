// A worker whose start fails after its bootsteps ran (a channel the consumer or control node opens fails) must not
// stay up un-ready, its heartbeats and Gossip running and nothing consumed: it stops what started and says why.
import { describe, expect, it } from 'vitest';
import type { WorkerStep } from '../src/runtime/bootstep';
import { memoryApp, memoryBrokerName, recordingLogger } from './fixtures/cluster/helpers';

describe('worker start failure', () => {
  it('stops the steps that started, emits fatal and shutdown, and rejects', async () => {
    const app = memoryApp(memoryBrokerName('start-failure'));
    const log = recordingLogger('w@test');
    const calls: string[] = [];
    const beating: WorkerStep = {
      name: 'Beating',
      start: () => Promise.resolve(void calls.push('beating started')),
      stop: () => Promise.resolve(void calls.push('beating stopped')),
    };
    const failing: WorkerStep = {
      name: 'Failing',
      start: () => Promise.reject(new Error('Queue "celeryev.x" does not exist')),
      stop: () => Promise.resolve(void calls.push('failing stopped')),
    };
    const worker = app.worker({ hostname: 'w@test', logger: log.logger, steps: [beating, failing] });
    const events: string[] = [];
    worker.on('fatal', (error) => events.push(`fatal: ${error.message}`));
    worker.on('shutdown', () => events.push('shutdown'));
    worker.on('ready', () => events.push('ready'));
    try {
      await expect(worker.start()).rejects.toThrow('does not exist');
      expect(calls).toEqual(['beating started', 'beating stopped']);
      expect(events).toEqual(['fatal: Queue "celeryev.x" does not exist', 'shutdown']);
      expect(log.messages()).toContain('Stopping: the worker could not start consuming: Queue "celeryev.x" does not exist');
    } finally {
      await worker.stop();
      await app.close();
    }
  });
});
