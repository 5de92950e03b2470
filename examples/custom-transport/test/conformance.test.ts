import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import { defineTransportSuite } from '@kq/test-harness';
import { FileSystemTransport } from '../src/index';

// One directory for the whole run; every test uses its own queue names inside it.
const root = await mkdtemp(join(tmpdir(), 'kq-fs-conformance-'));
afterAll(() => rm(root, { recursive: true, force: true }));

const VISIBILITY_TIMEOUT_MS = 1_500;

defineTransportSuite({
  name: 'filesystem',
  create: () => new FileSystemTransport({ root, visibilityTimeoutMs: VISIBILITY_TIMEOUT_MS }),
  createWithPollInterval: (pollIntervalMs) => new FileSystemTransport({ root, visibilityTimeoutMs: VISIBILITY_TIMEOUT_MS, pollIntervalMs }),
  // A process frozen past its lease: it claims and settles, but its renewal never comes.
  createStalled: () => new FileSystemTransport({ root, visibilityTimeoutMs: VISIBILITY_TIMEOUT_MS, leaseRenewIntervalMs: 1_000_000 }),
  crash: async (transport) => {
    if (!(transport instanceof FileSystemTransport)) throw new TypeError('expected a FileSystemTransport');
    await transport.abandon();
  },
  recoveryTimeoutMs: VISIBILITY_TIMEOUT_MS * 4,
  // Its leases: the suite checks that a live holder keeps its messages past them, that a frozen holder's late ack is
  // refused (createStalled), that an acked message stays gone and that noAck claims hold none.
  leaseMs: VISIBILITY_TIMEOUT_MS,
  peerModule: fileURLToPath(new URL('./conformance-peer.ts', import.meta.url)),
  peerEnv: { KQ_PEER_ROOT: root, KQ_PEER_VISIBILITY_MS: String(VISIBILITY_TIMEOUT_MS) },
});
