// The conformance suite's second OS process on the filesystem transport: the same directory and timeout.
import { FileSystemTransport } from '../src/index';

export function createTransport(): FileSystemTransport {
  return new FileSystemTransport({ root: process.env['KQ_PEER_ROOT'] as string, visibilityTimeoutMs: Number(process.env['KQ_PEER_VISIBILITY_MS']) });
}
