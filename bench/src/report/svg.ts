// bench/results.svg: one horizontal bar panel per broker and workload (medians), kq highlighted. Plain SVG text.
import type { Workload } from '../cases';
import { failureNote, figures, type CaseOutcome } from '../outcome';
import type { BrokerKind } from '../protocol';
import { formatMs, formatRate } from './format';

interface Bar {
  label: string;
  value: number;
  text: string;
  tone: 'kq' | 'peer' | 'raw';
}

interface Panel {
  title: string;
  bars: Bar[];
}

const WIDTH = 1060;
const LABEL_WIDTH = 330;
const BAR_AREA = 400;
const ROW = 22;
const BAR = 15;
const TITLE = 30;
const GAP = 22;
const COLOURS = { kq: '#d9480f', peer: '#4263eb', raw: '#adb5bd' } as const;
const BROKERS: Record<BrokerKind, string> = { redis: 'Redis', amqp: 'RabbitMQ', postgres: 'PostgreSQL' };

function tone(outcome: CaseOutcome): Bar['tone'] {
  if (outcome.case.system === 'kq') return 'kq';
  return outcome.case.system.startsWith('raw-') ? 'raw' : 'peer';
}

function note(outcome: CaseOutcome): string {
  const text = failureNote(outcome);
  return text ? ` (${text})` : '';
}

function ratePanel(outcomes: readonly CaseOutcome[], broker: BrokerKind, workload: Workload, title: string, keep: (o: CaseOutcome) => boolean): Panel | null {
  const bars: Bar[] = [];
  for (const outcome of outcomes) {
    if (outcome.case.broker !== broker || outcome.case.workload !== workload || !keep(outcome)) continue;
    const f = figures(outcome);
    if (f?.kind === 'rate') bars.push({ label: outcome.case.label, value: f.rate.median, text: `${formatRate(f.rate.median)}/s${note(outcome)}`, tone: tone(outcome) });
    else bars.push({ label: outcome.case.label, value: 0, text: 'failed', tone: tone(outcome) });
  }
  return bars.length > 0 ? { title: `${BROKERS[broker]} · ${title}`, bars } : null;
}

function latencyPanel(outcomes: readonly CaseOutcome[], broker: BrokerKind): Panel | null {
  const bars: Bar[] = [];
  for (const outcome of outcomes) {
    if (outcome.case.broker !== broker || outcome.case.workload !== 'W3') continue;
    const f = figures(outcome);
    if (f?.kind === 'latency') {
      bars.push({
        label: outcome.case.label,
        value: f.p50.median,
        text: `p50 ${formatMs(f.p50.median)} ms · p99 ${formatMs(f.p99.median)} ms${note(outcome)}`,
        tone: tone(outcome),
      });
    } else bars.push({ label: outcome.case.label, value: 0, text: 'failed', tone: tone(outcome) });
  }
  return bars.length > 0 ? { title: `${BROKERS[broker]} · W3 round trip, p50 latency (ms, shorter is better)`, bars } : null;
}

export function renderSvg(outcomes: readonly CaseOutcome[], subtitle: string): string {
  const panels: Panel[] = [];
  for (const broker of ['redis', 'amqp', 'postgres'] as const) {
    panels.push(
      ...[
        ratePanel(outcomes, broker, 'W1', 'W1 enqueue, awaited one by one (tasks/s)', (o) => o.case.mode === 'awaited'),
        ratePanel(outcomes, broker, 'W1', 'W1 enqueue, bulk (tasks/s)', (o) => o.case.mode === 'bulk'),
        ratePanel(outcomes, broker, 'W2', 'W2 drain, start to last ack (tasks/s)', () => true),
        latencyPanel(outcomes, broker),
      ].filter((panel): panel is Panel => panel !== null),
    );
  }
  const parts: string[] = [];
  let y = 56;
  for (const panel of panels) {
    parts.push(`<text x="16" y="${y}" class="panel">${escape(panel.title)}</text>`);
    y += TITLE - 14;
    const max = Math.max(...panel.bars.map((bar) => bar.value), Number.MIN_VALUE);
    for (const bar of panel.bars) {
      const length = bar.value > 0 ? Math.max(2, (bar.value / max) * BAR_AREA) : 0;
      const top = y + (ROW - BAR) / 2;
      parts.push(`<text x="${LABEL_WIDTH - 10}" y="${top + BAR - 3}" class="label${bar.tone === 'kq' ? ' kq' : ''}">${escape(bar.label)}</text>`);
      if (length > 0) parts.push(`<rect x="${LABEL_WIDTH}" y="${top}" width="${length.toFixed(1)}" height="${BAR}" rx="2" fill="${COLOURS[bar.tone]}"/>`);
      parts.push(`<text x="${(LABEL_WIDTH + length + 6).toFixed(1)}" y="${top + BAR - 3}" class="value">${escape(bar.text)}</text>`);
      y += ROW;
    }
    y += GAP;
  }
  const height = y + 10;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="kq benchmark results">`,
    '<style>',
    '  text { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; font-size: 12px; fill: #212529; }',
    '  .title { font-size: 17px; font-weight: 600; }',
    '  .subtitle { fill: #495057; }',
    '  .panel { font-size: 13px; font-weight: 600; }',
    '  .label { text-anchor: end; }',
    '  .kq { font-weight: 700; fill: #d9480f; }',
    '  .value { fill: #495057; }',
    '</style>',
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="16" y="24" class="title">kq next to BullMQ, bee-queue, celery.node, Python Celery and the raw drivers (medians)</text>`,
    `<text x="16" y="40" class="subtitle">${escape(subtitle)}</text>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
