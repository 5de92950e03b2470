import { EventEmitter, once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { TypedEmitter } from '../src/typed-emitter';

class Probe extends TypedEmitter<{ ready: [count: number]; error: [Error] }> {}

describe('TypedEmitter', () => {
  it("is Node's EventEmitter, so Node's helpers take it", async () => {
    const probe = new Probe();
    expect(probe).toBeInstanceOf(EventEmitter);
    const ready = once(probe, 'ready');
    probe.emit('ready', 3);
    expect(await ready).toEqual([3]);
  });

  it('drops an error event nobody listens to instead of throwing, and delivers one somebody does', () => {
    const probe = new Probe();
    expect(probe.emit('error', new Error('unheard'))).toBe(false);
    const heard: string[] = [];
    probe.on('error', (error) => heard.push(error.message));
    expect(probe.emit('error', new Error('heard'))).toBe(true);
    expect(heard).toEqual(['heard']);
  });
});
