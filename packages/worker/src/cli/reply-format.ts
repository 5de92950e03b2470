import { styleText } from 'node:util';
import { pythonStr } from '../events/python-str';

export interface ReplyPrintOptions {
  /** Show each reply's value (inspect/control) or only who answered (status). */
  showReply?: boolean;
  colour?: boolean;
}

/**
 * One reply the way Celery's CLI prints it: `->  <node>: OK` (or `ERROR`), then the value indented — a list as
 * `* item` lines, `{ok: …}`/`{error: …}` unwrapped, other objects as sorted, indented JSON.
 */
export function formatReply(node: string, value: unknown, options: ReplyPrintOptions = {}): string {
  const [status, body] = pretty(value);
  // The caller decided colour (a TTY, no NO_COLOR), so Node is not asked to check stdout again.
  const paint = (format: Parameters<typeof styleText>[0], s: string): string => (options.colour ? styleText(format, s, { validateStream: false }) : s);
  const title = `${paint(['bold', 'cyan'], `${node}: `)}${status === 'OK' ? paint('green', 'OK') : paint('red', 'ERROR')}`;
  const head = `${paint(['bold', 'white'], '->')}  ${title}`;
  return options.showReply ? `${head}\n${indent(body, 4)}` : head;
}

/** `\n<n> node(s) online.` */
export function nodesOnline(count: number): string {
  return `\n${count} ${count === 1 ? 'node' : 'nodes'} online.`;
}

function pretty(value: unknown): ['OK' | 'ERROR', string] {
  if (Array.isArray(value)) return ['OK', value.length === 0 ? '- empty -' : value.map((item) => `* ${pythonStr(item)}`).join('\n')];
  if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if ('ok' in record) return ['OK', indent(pretty(record['ok'])[1], 4)];
    if ('error' in record) return ['ERROR', indent(pretty(record['error'])[1], 4)];
    return ['OK', sortedJson(value)];
  }
  if (typeof value === 'string') return ['OK', value];
  return ['OK', value === null || value === undefined ? 'None' : String(value)];
}

function sortedJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v: unknown) =>
      v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
    4,
  );
}

function indent(textBlock: string, size: number): string {
  const pad = ' '.repeat(size);
  return textBlock
    .split('\n')
    .map((line) => pad + line)
    .join('\n');
}
