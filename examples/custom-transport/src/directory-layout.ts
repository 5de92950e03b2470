import { createHash } from 'node:crypto';
import { join } from 'node:path';

/** Longest encoded entity name used as a file name; longer names are hashed (file names stop at 255 bytes). */
const MAX_ENCODED_LENGTH = 180;

/**
 * A file-name-safe, collision-free spelling of a queue or exchange name: letters, digits, `_` and `-` stay,
 * every other UTF-8 byte becomes `%XX`; a leading `_` keeps even the empty name a valid file name.
 */
export function encodeEntityName(name: string): string {
  const encoded = `_${Array.from(Buffer.from(name, 'utf8'))
    .map((byte) => (isSafe(byte) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('')}`;
  if (encoded.length <= MAX_ENCODED_LENGTH) return encoded;
  return `#${createHash('sha256').update(name).digest('hex')}`;
}

function isSafe(byte: number): boolean {
  return (
    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte === 0x5f || byte === 0x2d
  );
}

/** Short stable digest for file names that must be unique per value (bindings). */
export function digest(value: string): string {
  return createHash('sha1').update(value).digest('hex');
}

/**
 * Where everything lives under the transport's root directory:
 *
 * ```
 * <root>/tmp/                                  staging area: files are written here, then renamed into place
 * <root>/exchanges/<exchange>.json             exchange declarations
 * <root>/bindings/<exchange>/<queue>.<key>.json one file per binding
 * <root>/queues/<queue>/queue.json             queue declaration
 * <root>/queues/<queue>/ready/p<bucket>/<msg>  ready messages; lexical order = FIFO
 * <root>/queues/<queue>/claimed/<lease>        claimed (unacked) messages
 * <root>/queues/<queue>/delayed/<due>          messages waiting for their delay
 * <root>/queues/<queue>/quarantine/<msg>       files that could not be read as messages (kept, never lost)
 * ```
 */
export class DirectoryLayout {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  get tmp(): string {
    return join(this.root, 'tmp');
  }

  get exchangesDir(): string {
    return join(this.root, 'exchanges');
  }

  get bindingsRoot(): string {
    return join(this.root, 'bindings');
  }

  get queuesDir(): string {
    return join(this.root, 'queues');
  }

  exchangeFile(exchange: string): string {
    return join(this.exchangesDir, `${encodeEntityName(exchange)}.json`);
  }

  bindingsDir(exchange: string): string {
    return join(this.bindingsRoot, encodeEntityName(exchange));
  }

  queueDir(queue: string): string {
    return join(this.queuesDir, encodeEntityName(queue));
  }

  queueFile(queue: string): string {
    return join(this.queueDir(queue), 'queue.json');
  }

  readyDir(queue: string): string {
    return join(this.queueDir(queue), 'ready');
  }

  bucketDir(queue: string, bucket: number): string {
    return join(this.readyDir(queue), `p${bucket}`);
  }

  claimedDir(queue: string): string {
    return join(this.queueDir(queue), 'claimed');
  }

  delayedDir(queue: string): string {
    return join(this.queueDir(queue), 'delayed');
  }

  quarantineDir(queue: string): string {
    return join(this.queueDir(queue), 'quarantine');
  }
}

/** The bucket number of a `p<bucket>` directory name, or undefined for anything else. */
export function bucketOf(directoryName: string): number | undefined {
  const match = /^p(\d+)$/.exec(directoryName);
  return match ? Number(match[1]) : undefined;
}
