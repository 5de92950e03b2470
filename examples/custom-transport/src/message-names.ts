import { randomBytes } from 'node:crypto';

/**
 * Message file names whose lexical order is FIFO order:
 * `<15-digit ms>-<8-hex sequence>-<8-hex random>.<m|r>`. The time comes first; within one millisecond the
 * process's sequence number keeps its own publishes in order; the random part keeps names from two processes
 * apart. The suffix is the redelivered flag (`m` = first delivery, `r` = delivered before), so restoring a
 * message is a rename, never a rewrite.
 */
export class MessageNameClock {
  #lastStamp = 0;
  #sequence = 0;

  /** A new name stamped now (or at `stamp`, for a delayed message falling due). */
  next(redelivered: boolean, stamp?: number): string {
    let time = stamp ?? Date.now();
    if (stamp === undefined) {
      // Never go backwards, even if the wall clock does: FIFO must survive clock adjustments.
      time = Math.max(time, this.#lastStamp);
      this.#lastStamp = time;
    }
    this.#sequence = (this.#sequence + 1) % 0x1_0000_0000;
    return `${pad(time, 15)}-${this.#sequence.toString(16).padStart(8, '0')}-${randomBytes(4).toString('hex')}.${redelivered ? 'r' : 'm'}`;
  }
}

export function pad(value: number, width: number): string {
  return Math.max(0, Math.trunc(value)).toString().padStart(width, '0');
}

const MESSAGE_NAME = /^\d{15}-[0-9a-f]{8}-[0-9a-f]{8}\.[mr]$/;

export function isMessageName(name: string): boolean {
  return MESSAGE_NAME.test(name);
}

/** The same message name with the redelivered flag set: sorts where the original did (restore to the head). */
export function asRedelivered(name: string): string {
  return `${name.slice(0, -1)}r`;
}

export function isRedeliveredName(name: string): boolean {
  return name.endsWith('.r');
}

/** A claimed file: `<15-digit lease start>.<owner>.p<bucket>.<message name>`. */
export interface LeaseName {
  leasedAt: number;
  owner: string;
  bucket: number;
  messageName: string;
}

export function leaseName(lease: LeaseName): string {
  return `${pad(lease.leasedAt, 15)}.${lease.owner}.p${lease.bucket}.${lease.messageName}`;
}

export function parseLeaseName(name: string): LeaseName | undefined {
  const match = /^(\d{15})\.([0-9a-f]+)\.p(\d+)\.(.+)$/.exec(name);
  if (!match || !isMessageName(match[4] as string)) return undefined;
  return { leasedAt: Number(match[1]), owner: match[2] as string, bucket: Number(match[3]), messageName: match[4] as string };
}

/** A delayed file: `<15-digit due time>.p<bucket>.<message name>`; lexical order = due order. */
export interface DelayedName {
  dueAt: number;
  bucket: number;
  messageName: string;
}

export function delayedName(entry: DelayedName): string {
  return `${pad(entry.dueAt, 15)}.p${entry.bucket}.${entry.messageName}`;
}

export function parseDelayedName(name: string): DelayedName | undefined {
  const match = /^(\d{15})\.p(\d+)\.(.+)$/.exec(name);
  if (!match || !isMessageName(match[3] as string)) return undefined;
  return { dueAt: Number(match[1]), bucket: Number(match[2]), messageName: match[3] as string };
}
