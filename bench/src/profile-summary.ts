// Summarises a V8 .cpuprofile (from `KQBENCH_NODE_FLAGS="--cpu-prof --cpu-prof-dir=DIR" pnpm bench -- ...`):
// the functions with the most self time, and the kq functions (packages/*) with the most total time.
//
//   cd bench && pnpm exec tsx src/profile-summary.ts DIR/CPU.*.cpuprofile [--top 25]
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface Row {
  name: string;
  where: string;
  self: number;
  total: number;
}

function frameKey(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  return `${name}\u0000${shortUrl(frame.url)}:${sourceLine(frame.url, name) ?? frame.lineNumber + 1}`;
}

const sources = new Map<string, string[] | null>();

/**
 * tsx strips the whitespace of the TypeScript it runs, so profile line numbers point into one long line. For kq's
 * own files the definition of a named function is looked up in the source instead (first match).
 */
function sourceLine(url: string, name: string): number | null {
  if (!url.includes('/packages/') || !url.endsWith('.ts') || name === '(anonymous)') return null;
  if (!sources.has(url)) {
    try {
      sources.set(url, readFileSync(fileURLToPath(url), 'utf8').split('\n'));
    } catch {
      sources.set(url, null);
    }
  }
  const lines = sources.get(url);
  if (!lines) return null;
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const definition = new RegExp(`^\\s*(?:export\\s+)?(?:(?:public|private|protected|static|async|get|set|readonly|override)\\s+)*(?:function\\s*\\*?\\s*)?${escaped}\\s*(?:<[^>]*>)?\\s*\\(|\\b${escaped}\\s*=\\s*(?:async\\s*)?\\(`);
  const index = lines.findIndex((line) => definition.test(line));
  return index >= 0 ? index + 1 : null;
}

function shortUrl(url: string): string {
  const at = url.indexOf('/packages/');
  if (at >= 0) return url.slice(at + 1);
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) return url.slice(modules + '/node_modules/'.length);
  return url.replace(/^file:\/\//, '') || '(native)';
}

/** Self and total (inclusive, counted once per stack) milliseconds per function. */
export function summarizeProfile(profile: CpuProfile): { rows: Row[]; totalMs: number; idleMs: number } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const rows = new Map<string, Row>();
  let totalMs = 0;
  let idleMs = 0;
  profile.samples.forEach((sample, index) => {
    const ms = (profile.timeDeltas[index] ?? 0) / 1000;
    totalMs += ms;
    const leaf = byId.get(sample);
    if (!leaf) return;
    if (leaf.callFrame.functionName === '(idle)') idleMs += ms;
    const seen = new Set<string>();
    for (let id: number | undefined = sample; id !== undefined; id = parent.get(id)) {
      const node = byId.get(id);
      if (!node) break;
      const key = frameKey(node.callFrame);
      let row = rows.get(key);
      if (!row) {
        const [name, where] = key.split('\u0000') as [string, string];
        row = { name, where, self: 0, total: 0 };
        rows.set(key, row);
      }
      if (id === sample) row.self += ms;
      if (!seen.has(key)) {
        row.total += ms;
        seen.add(key);
      }
    }
  });
  return { rows: [...rows.values()], totalMs, idleMs };
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' } } });
  const top = Number(values.top);
  for (const file of positionals) {
    const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
    const { rows, totalMs, idleMs } = summarizeProfile(profile);
    const pct = (ms: number): string => `${((ms / totalMs) * 100).toFixed(1).padStart(5)}%`;
    console.log(`\n${file}: ${(totalMs / 1000).toFixed(2)} s sampled, ${pct(idleMs)} idle`);
    console.log('\nself time:');
    for (const row of [...rows].sort((a, b) => b.self - a.self).slice(0, top)) {
      console.log(`  ${pct(row.self)}  ${row.name}  ${row.where}`);
    }
    console.log('\ntotal time, kq code (packages/*):');
    for (const row of rows.filter((r) => r.where.startsWith('packages/')).sort((a, b) => b.total - a.total).slice(0, top)) {
      console.log(`  ${pct(row.total)} total ${pct(row.self)} self  ${row.name}  ${row.where}`);
    }
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop() ?? '\u0000')) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
