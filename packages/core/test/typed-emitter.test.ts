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

  it('hands listeners every argument as emitted, none to five, and says whether anyone listened', () => {
    const emitter = new TypedEmitter<{ many: unknown[] }>();
    expect(emitter.emit('many', 1)).toBe(false);
    const seen: unknown[][] = [];
    emitter.on('many', (...args: unknown[]) => seen.push(args));
    const five = [1, 'two', null, undefined, { five: 5 }];
    expect(emitter.emit('many')).toBe(true);
    expect(emitter.emit('many', ...five)).toBe(true);
    expect(seen).toEqual([[], five]);
  });
});
