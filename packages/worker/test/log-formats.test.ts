import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Logger, fileLogSink, formatLogLine, jsonLogSink } from '../src/index';

// One logger, two formats, both written by pino: Celery's lines and JSON objects, every level, appended to a file.
describe('the log formats', () => {
  it('appends Celery lines for every level to a file, creating its folder', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'kq-log-')), 'nested', 'worker.log');
    for (const round of [1, 2]) {
      const sink = fileLogSink(path);
      const log = new Logger('w1@host', { level: 'debug', sink });
      for (const level of ['debug', 'info', 'warning', 'error', 'critical'] as const) log.log(level, `${level} "${round}"`, { task_id: 'not in text' });
      await sink.close();
    }
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(10);
    expect(lines[2]).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}: WARNING\/w1@host\] warning "1"$/);
    expect(lines.map((line) => line.replace(/^\[[^:]+:[^:]+:[^:]+: /, ''))).toEqual([1, 2].flatMap((round) =>
      ['DEBUG/w1@host] debug', 'INFO/w1@host] info', 'WARNING/w1@host] warning', 'ERROR/w1@host] error', 'CRITICAL/w1@host] critical'].map((head) => `${head} "${round}"`),
    ));
  });

  it('writes the same records as JSON objects with their fields', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'kq-log-')), 'worker.jsonl');
    const sink = jsonLogSink({ destination: path });
    new Logger('w1@host', { level: 'debug', sink }).log('critical', 'down', { task_id: 't1' });
    await sink.close();
    expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ level: 'fatal', logger: 'w1@host', message: 'down', task_id: 't1' });
  });

  it('colours the level when asked, whatever stdout is', () => {
    const record = { level: 'error', logger: 'n', message: 'm', time: new Date(0) } as const;
    expect(formatLogLine(record)).toBe('[1970-01-01 00:00:00.000: ERROR/n] m');
    expect(formatLogLine(record, true)).toBe('[1970-01-01 00:00:00.000: \u001b[31mERROR\u001b[39m/n] m');
  });
});
