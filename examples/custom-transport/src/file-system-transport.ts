import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';
import { KqError, VirtualTransport, type TransportDescription, type TransportOptions, type VirtualTransportOptions } from '@kq/core';
import { FileSystemStore, type FileSystemStoreOptions } from './file-system-store';

export interface FileSystemTransportOptions extends VirtualTransportOptions, FileSystemStoreOptions {
  /** The directory holding the queues; created when missing. Every process that opens it shares them. */
  root: string;
}

/**
 * A broker-less transport for processes on one machine: queues are directories, messages are files, and
 * `rename` decides which consumer gets each message. Exchanges, routing, prefetch, ack emulation, priorities,
 * dead-lettering and fair consumption come from `VirtualTransport`; the `FileSystemStore` only keeps files.
 */
export class FileSystemTransport extends VirtualTransport {
  readonly name = 'filesystem';
  readonly root: string;
  readonly fileStore: FileSystemStore;

  constructor(options: FileSystemTransportOptions) {
    const root = resolve(options.root);
    // The store reports through the transport, which does not exist until super() returns.
    const problems: { report?: (error: Error) => void } = {};
    const store = new FileSystemStore(root, {
      ...options,
      onProblem: (error) => {
        options.onProblem?.(error);
        problems.report?.(error);
      },
    });
    super(store, options);
    this.root = root;
    this.fileStore = store;
    problems.report = (error) => this.emit('error', error);
  }

  /** `file:///absolute/path` (query parameters: `visibilityTimeoutMs`, `pollFallbackMs`, `sync`). */
  static fromUrl(url: string, options: Partial<FileSystemTransportOptions> = {}): FileSystemTransport {
    const parsed = new URL(url);
    if (parsed.protocol !== 'file:') {
      throw new KqError(`FileSystemTransport needs a file:///absolute/path URL, not ${JSON.stringify(url)}.`);
    }
    const fromQuery: Partial<FileSystemTransportOptions> = {};
    const number = (key: string): number | undefined => {
      const raw = parsed.searchParams.get(key);
      if (raw === null) return undefined;
      const value = Number(raw);
      if (!Number.isFinite(value) || value < 0) throw new KqError(`${key} in ${url} must be a non-negative number of milliseconds.`);
      return value;
    };
    const visibility = number('visibilityTimeoutMs');
    const fallback = number('pollFallbackMs');
    if (visibility !== undefined) fromQuery.visibilityTimeoutMs = visibility;
    if (fallback !== undefined) fromQuery.pollFallbackMs = fallback;
    if (parsed.searchParams.has('sync')) fromQuery.sync = parsed.searchParams.get('sync') !== 'false';
    parsed.search = '';
    return new FileSystemTransport({ ...fromQuery, ...options, root: fileURLToPath(parsed) });
  }

  describe(): TransportDescription {
    return { transport: 'filesystem', hostname: this.root, port: null, virtualHost: null, userid: null, ssl: false };
  }

  /**
   * Stops this transport as if its process had crashed: nothing it holds is restored and its leases are not
   * renewed, so after the visibility timeout other processes receive those messages again. For tests of crash
   * recovery, and for shutting down when the process must not touch the queues any more.
   */
  async abandon(): Promise<void> {
    this.fileStore.abandon();
    await this.close();
  }
}

/** The transport-package entry point (`registerTransport('file', createTransport)`). */
export function createTransport(url: string, options: TransportOptions = {}): FileSystemTransport {
  return FileSystemTransport.fromUrl(url, transportOptions(options));
}

/** Keeps the options this transport understands, checking their types (they arrive untyped from a URL registry). */
function transportOptions(options: TransportOptions): Partial<FileSystemTransportOptions> {
  const picked: Partial<FileSystemTransportOptions> = {};
  const numberOption = (key: 'visibilityTimeoutMs' | 'pollFallbackMs' | 'pollIntervalMs' | 'batchSize'): void => {
    const value = options[key];
    if (value === undefined) return;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new KqError(`The ${key} option must be a number.`);
    picked[key] = value;
  };
  numberOption('visibilityTimeoutMs');
  numberOption('pollFallbackMs');
  numberOption('pollIntervalMs');
  numberOption('batchSize');
  if (options['sync'] !== undefined) picked.sync = options['sync'] === true;
  const steps = options['prioritySteps'];
  if (Array.isArray(steps) && steps.every((step) => typeof step === 'number')) picked.prioritySteps = steps as number[];
  const onProblem = options['onProblem'];
  if (typeof onProblem === 'function') picked.onProblem = onProblem as (error: Error) => void;
  return picked;
}
