import { describe, expect, it } from 'vitest';
import { processTreeRssBytes, sampleRssPeak } from '../src/process-tree';

describe('sampleRssPeak', () => {
  it('never reports a peak below the idle reading it starts from (memory given back between the two reads)', () => {
    const idle = (processTreeRssBytes(process.pid) ?? 0) + 1024 ** 3; // more than this process will hold
    expect(sampleRssPeak(process.pid, idle).stop()).toBe(idle);
  });

  it('reports what it sampled when that is higher', () => {
    const peak = sampleRssPeak(process.pid, 1).stop();
    expect(peak).toBeGreaterThan(1);
  });
});
