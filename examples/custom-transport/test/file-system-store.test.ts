import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Exchange, KqError, Queue, createTransport as createTransportByUrl, registerTransport, type Delivery } from '@kq/core';
import { bodyText, quietPeriod, recordingConsumer, testMessage, waitFor } from '@kq/test-harness';
import { FileSystemTransport, createTransport } from '../src/index';
import { DirectoryLayout } from '../src/directory-layout';

describe('FileSystemTransport specifics', () => {
  let root: string;
  const transports: FileSystemTransport[] = [];
  const open = (options: { visibilityTimeoutMs?: number } = {}): FileSystemTransport => {
    const transport = new FileSystemTransport({ root, ...options });
    transports.push(transport);
    return transport;
  };

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'kq-fs-store-'));
  });

  afterEach(async () => {
    await Promise.all(transports.splice(0).map((transport) => transport.close()));
    await rm(root, { recursive: true, force: true });
  });

  it('a live holder keeps its message past the visibility timeout (leases are renewed)', async () => {
    const holder = await open({ visibilityTimeoutMs: 300 }).createChannel();
    await holder.declareQueue(new Queue('long.job'));
    await holder.publish('', 'long.job', testMessage('slow'));
    const delivery = await holder.get('long.job');
    expect(delivery && bodyText(delivery)).toBe('slow');
    const { log } = await recordingConsumer(await open({ visibilityTimeoutMs: 300 }).createChannel(), ['long.job']);
    await quietPeriod(1_200);
    expect(log.ids, 'deliveries to another process while the holder was alive').toEqual([]);
    await delivery?.ack();
    await quietPeriod(300);
    expect(log.ids).toEqual([]);
  });

  it('an unreadable file is set aside in quarantine/, reported, and the consumer carries on', async () => {
    const transport = open();
    const problems: Error[] = [];
    transport.on('error', (error) => problems.push(error));
    const channel = await transport.createChannel();
    await channel.declareQueue(new Queue('mixed'));
    await channel.publish('', 'mixed', testMessage('good'));
    // Sorts before the good message, so the consumer meets it first.
    const layout = new DirectoryLayout(root);
    await writeFile(join(layout.bucketDir('mixed', 0), '000000000000001-00000001-00000000.m'), 'not a message');
    const { log } = await recordingConsumer(channel, ['mixed']);
    await waitFor(() => log.count >= 1, 5_000, 'the good message');
    expect(log.ids).toEqual(['good']);
    expect(await readdir(layout.quarantineDir('mixed'))).toEqual(['000000000000001-00000001-00000000.m']);
    expect(problems.map((problem) => problem.message).join()).toMatch(/quarantine/);
  });

  it('queue and exchange names may hold any characters', async () => {
    const channel = await open().createChannel();
    const names = ['a/b', '..', '', 'üñî.cødé 🎌', '%2F', 'x'.repeat(300)];
    const exchange = new Exchange('odd/exchange ✓', { type: 'direct' });
    for (const [index, name] of names.entries()) {
      await channel.declareQueue(new Queue(name, { exchange, routingKey: `k${index}` }));
      await channel.publish('odd/exchange ✓', `k${index}`, testMessage(`for-${index}`));
    }
    for (const [index, name] of names.entries()) {
      expect((await channel.checkQueue(name)).messageCount, `queue ${JSON.stringify(name.slice(0, 20))}`).toBe(1);
      const delivery = await channel.get(name);
      expect(delivery && bodyText(delivery)).toBe(`for-${index}`);
      await delivery?.ack();
    }
  });

  it('deleting a queue removes its bindings', async () => {
    const channel = await open().createChannel();
    const exchange = new Exchange('routes', { type: 'direct' });
    await channel.declareQueue(new Queue('gone', { exchange, routingKey: 'k' }));
    await channel.declareQueue(new Queue('kept', { exchange, routingKey: 'k' }));
    expect(await channel.deleteQueue('gone')).toBe(0);
    await channel.publish('routes', 'k', testMessage('after-delete'));
    expect((await channel.checkQueue('kept')).messageCount).toBe(1);
    await expect(channel.checkQueue('gone')).rejects.toThrow(/does not exist/);
  });

  it('createTransport takes file:// URLs with options in the query, and plugs into the URL registry', async () => {
    const transport = createTransport(`${pathToFileURL(root).href}?visibilityTimeoutMs=1234&pollFallbackMs=50`);
    transports.push(transport);
    expect(transport).toBeInstanceOf(FileSystemTransport);
    expect(transport.root).toBe(root);
    expect(transport.fileStore.visibilityTimeoutMs).toBe(1234);
    expect(transport.fileStore.pollFallbackMs).toBe(50);
    expect(transport.describe()).toMatchObject({ transport: 'filesystem', hostname: root });
    expect(() => createTransport('redis://localhost')).toThrow(KqError);
    expect(() => createTransport(`${pathToFileURL(root).href}?visibilityTimeoutMs=soon`)).toThrow(/visibilityTimeoutMs/);

    registerTransport('file', createTransport);
    const viaRegistry = await createTransportByUrl(pathToFileURL(root).href, { visibilityTimeoutMs: 999 });
    transports.push(viaRegistry as FileSystemTransport);
    expect(viaRegistry).toBeInstanceOf(FileSystemTransport);
    expect((viaRegistry as FileSystemTransport).fileStore.visibilityTimeoutMs).toBe(999);
  });

  it('an abandoned transport leaves its claims on disk for others (crash semantics)', async () => {
    const doomed = open({ visibilityTimeoutMs: 200 });
    const channel = await doomed.createChannel();
    await channel.declareQueue(new Queue('work'));
    await channel.publish('', 'work', testMessage('held'));
    const held = (await channel.get('work')) as Delivery;
    await doomed.abandon();
    await expect(held.ack()).rejects.toThrow();
    const layout = new DirectoryLayout(root);
    expect(await readdir(layout.claimedDir('work'))).toHaveLength(1);
    const { log } = await recordingConsumer(await open({ visibilityTimeoutMs: 200 }).createChannel(), ['work']);
    await waitFor(() => log.count >= 1, 5_000, 'the recovered message');
    expect(log.deliveries[0]?.deliveryInfo.redelivered).toBe(true);
    expect(await readdir(layout.claimedDir('work'))).toHaveLength(0);
  });
});
