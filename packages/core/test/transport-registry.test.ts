import { describe, expect, it } from 'vitest';
import { TransportNotInstalled, UnknownTransport } from '../src/errors';
import { MemoryTransport } from '../src/memory/memory-transport';
import { createTransport, knownSchemes, registerTransport } from '../src/transport-registry';

describe('transport registry', () => {
  it('makes the memory transport for memory:// URLs, named by host', async () => {
    const transport = await createTransport('memory://registry-test');
    expect(transport).toBeInstanceOf(MemoryTransport);
    expect(transport.describe()).toMatchObject({ transport: 'memory', hostname: 'registry-test' });
  });

  it('knows the built-in schemes', () => {
    expect(knownSchemes()).toEqual(expect.arrayContaining(['memory', 'redis', 'rediss', 'amqp', 'amqps']));
  });

  it('names the package to install when a transport package is missing', async () => {
    registerTransport('nosuch', '@kq/no-such-transport');
    const error = await createTransport('nosuch://localhost').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportNotInstalled);
    expect((error as Error).message).toContain('pnpm add @kq/no-such-transport');
  });

  it('refuses an unknown scheme with the list of known ones', async () => {
    const error = await createTransport('carrier-pigeon://coop').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownTransport);
    expect((error as Error).message).toContain('memory');
  });

  it('accepts custom transports', async () => {
    registerTransport('custom', (url) => MemoryTransport.fromUrl(url.replace('custom', 'memory')));
    expect(await createTransport('custom://x')).toBeInstanceOf(MemoryTransport);
  });
});
