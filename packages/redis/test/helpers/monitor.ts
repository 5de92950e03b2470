import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface MonitorCommand {
  /** `<capture file>:<line>` */
  source: string;
  db: number;
  command: string;
  args: string[];
}

/** The golden MONITOR lines in test/fixtures, parsed. */
export function loadCaptures(): MonitorCommand[] {
  const path = fileURLToPath(new URL('../fixtures/kombu-captures.monitor.txt', import.meta.url));
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map(parseFixtureLine);
}

export function capture(source: string): MonitorCommand {
  const found = loadCaptures().find((entry) => entry.source === source);
  if (!found) throw new Error(`no capture ${source}`);
  return found;
}

function parseFixtureLine(line: string): MonitorCommand {
  const match = /^(\S+:\d+): \d+\.\d+ \[(\d+) [^\]]+\] (.*)$/.exec(line);
  if (!match) throw new Error(`unreadable fixture line: ${line.slice(0, 80)}`);
  const words = parseMonitorArgs(match[3] as string);
  return { source: match[1] as string, db: Number(match[2]), command: words[0] as string, args: words.slice(1) };
}

/** Undoes redis-cli's `sdscatrepr` quoting of MONITOR arguments. */
export function parseMonitorArgs(text: string): string[] {
  const args: string[] = [];
  let at = 0;
  while (at < text.length) {
    if (text[at] === ' ') {
      at++;
      continue;
    }
    if (text[at] !== '"') throw new Error(`expected a quoted argument at ${at}`);
    at++;
    let value = '';
    while (text[at] !== '"') {
      const char = text[at] as string;
      if (char !== '\\') {
        value += char;
        at++;
        continue;
      }
      const next = text[at + 1] as string;
      if (next === 'x') {
        value += String.fromCharCode(parseInt(text.slice(at + 2, at + 4), 16));
        at += 4;
        continue;
      }
      const simple: Record<string, string> = { n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b', '"': '"', '\\': '\\' };
      value += simple[next] ?? next;
      at += 2;
    }
    at++;
    args.push(value);
  }
  return args;
}
