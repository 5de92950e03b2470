import { describe, expect, it } from 'vitest';
import { onStopSignals, stopSignalReceived } from '../src/platform/stop-signals';

// process.emit calls the listeners as a real signal would, without signalling the test process.
describe('stop signals', () => {
  it('onStopSignals counts SIGTERM and SIGINT together, so a second signal of either kind escalates', () => {
    const seen: string[] = [];
    const uninstall = onStopSignals((signal, count) => seen.push(`${signal}#${count}`));
    try {
      process.emit('SIGTERM', 'SIGTERM');
      process.emit('SIGINT', 'SIGINT');
    } finally {
      uninstall();
    }
    expect(seen).toEqual(['SIGTERM#1', 'SIGINT#2']);
  });

  it('its uninstaller removes both listeners', () => {
    const before = [process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')];
    const uninstall = onStopSignals(() => undefined);
    expect([process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')]).toEqual(before.map((n) => n + 1));
    uninstall();
    expect([process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')]).toEqual(before);
  });

  it('stopSignalReceived resolves on the first of either signal', async () => {
    const received = stopSignalReceived();
    process.emit('SIGINT', 'SIGINT');
    await expect(received).resolves.toBeUndefined();
    // The other signal's once-listener is still there; fire it so it does not outlive the test.
    process.emit('SIGTERM', 'SIGTERM');
  });
});
