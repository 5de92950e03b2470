import { appendFileSync, readFileSync } from 'node:fs';

/**
 * What the workers under test did, one line per event, appended synchronously (a SIGKILL loses nothing that was
 * written): `start <id> <pid> <ms>` when a task run begins, `finish <id> <pid> <ms>` when it returned, `acked <id>
 * <pid> <ms>` once its ack (or reject) reached the broker. A run started and not acked may run again.
 */
export class Ledger {
  readonly path: string;

  constructor(path: string) {
    this.path = path;
  }

  record(kind: LedgerKind, id: string): void {
    appendFileSync(this.path, `${kind} ${id} ${process.pid} ${Date.now()}\n`);
  }

  read(): LedgerEntry[] {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch {
      return [];
    }
    const entries: LedgerEntry[] = [];
    for (const line of text.split('\n')) {
      const [kind, id, pid, at] = line.split(' ');
      if ((kind === 'start' || kind === 'finish' || kind === 'acked') && id && pid && at) entries.push({ kind, id, pid: Number(pid), at: Number(at) });
    }
    return entries;
  }
}

export type LedgerKind = 'start' | 'finish' | 'acked';

export interface LedgerEntry {
  kind: LedgerKind;
  id: string;
  pid: number;
  at: number;
}
