import { readdirSync, readFileSync } from 'node:fs';

/** Linux's USER_HZ, which /proc reports CPU time in. */
const CLOCK_TICKS_PER_SECOND = 100;
/** Resident pages in /proc/<pid>/statm are 4 KiB on the machines the bench runs on (x86-64, arm64 Linux). */
const PAGE_BYTES = 4096;

/**
 * A process and its descendants as /proc (Linux) shows them — how the bench measures every system alike, whatever
 * language its worker is written in (Python's prefork children included). Null where /proc cannot tell.
 */
function processTree(root: number, moreRoots: readonly number[] = []): Set<number> | null {
  try {
    const parents = new Map<number, number>();
    for (const entry of readdirSync('/proc')) {
      const pid = Number(entry);
      if (!Number.isInteger(pid)) continue;
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        parents.set(pid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      } catch {
        // gone meanwhile
      }
    }
    const tree = new Set([root, ...moreRoots]);
    for (let grew = true; grew; ) {
      grew = false;
      for (const [pid, parent] of parents) {
        if (tree.has(parent) && !tree.has(pid)) {
          tree.add(pid);
          grew = true;
        }
      }
    }
    return tree;
  } catch {
    return null;
  }
}

/**
 * User + system CPU of each of many processes (their descendants included), µs in all: one walk of /proc for the lot,
 * where `processTreeCpuUs` per process would walk it once each (a fleet of 200 made that take a minute).
 */
export function processTreesCpuUs(roots: readonly number[]): number {
  const trees = processForest(roots);
  let ticks = 0;
  for (const pid of trees) ticks += cpuTicks(pid);
  return (ticks / CLOCK_TICKS_PER_SECOND) * 1e6;
}

/** Resident memory of many processes (their descendants included), bytes in all, from one walk of /proc. */
export function processTreesRssBytes(roots: readonly number[]): number {
  let pages = 0;
  for (const pid of processForest(roots)) {
    try {
      pages += Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
    } catch {
      // gone meanwhile
    }
  }
  return pages * PAGE_BYTES;
}

function processForest(roots: readonly number[]): Set<number> {
  const forest = new Set<number>();
  const first = roots[0];
  if (first === undefined) return forest;
  // processTree walks /proc once; growing from every root at the same time is the same walk.
  for (const pid of processTree(first, roots) ?? []) forest.add(pid);
  return forest;
}

function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0; // gone meanwhile
  }
}

/** User + system CPU of a process and its descendants, µs. */
export function processTreeCpuUs(root: number | undefined): number | null {
  const tree = root === undefined ? null : processTree(root);
  if (!tree) return null;
  let ticks = 0;
  for (const pid of tree) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return (ticks / CLOCK_TICKS_PER_SECOND) * 1e6;
}

/**
 * CPU a server has used, µs: its process and live children, plus the children it has already reaped (the root's
 * cutime and cstime) — PostgreSQL's backends end with their connections, and their CPU must still count.
 */
export function serverCpuUs(root: number): number | null {
  const live = processTreeCpuUs(root);
  if (live === null) return null;
  try {
    const stat = readFileSync(`/proc/${root}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return live + ((Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS_PER_SECOND) * 1e6;
  } catch {
    return null;
  }
}

/** The parent of a process (/proc), or null. */
export function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/** Resident memory of a process and its descendants, bytes. */
export function processTreeRssBytes(root: number | undefined): number | null {
  const tree = root === undefined ? null : processTree(root);
  if (!tree) return null;
  let pages = 0;
  for (const pid of tree) {
    try {
      pages += Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
    } catch {
      // gone meanwhile
    }
  }
  return pages * PAGE_BYTES;
}

/**
 * Samples a process tree's resident memory until stopped; resolves to the highest value seen (bytes), never below
 * `atLeast` (an idle reading taken just before: the tree may give memory back between that read and the first sample).
 */
export function sampleRssPeak(root: number | undefined, atLeast: number | null = null, everyMs = 50): { stop(): number | null } {
  let peak: number | null = atLeast;
  const sample = (): void => {
    const rss = processTreeRssBytes(root);
    if (rss !== null) peak = Math.max(peak ?? 0, rss);
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop(): number | null {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/** Processes whose command name (`/proc/<pid>/comm`) is `name`, e.g. RabbitMQ's `beam.smp`. Empty without /proc. */
export function findProcesses(name: string): number[] {
  const found: number[] = [];
  try {
    for (const entry of readdirSync('/proc')) {
      const pid = Number(entry);
      if (!Number.isInteger(pid)) continue;
      try {
        if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === name) found.push(pid);
      } catch {
        // gone meanwhile
      }
    }
  } catch {
    // no /proc
  }
  return found;
}
