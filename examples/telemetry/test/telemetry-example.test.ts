import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brokerReachable, brokerUrls, pythonAvailable } from '@kq/test-harness';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const ready = (await brokerReachable('redis')) && (await pythonAvailable(['celery', 'redis']));

describe('the telemetry example', () => {
  it('prints one trace: request → send → run → send → run, and exits', { timeout: 60_000 }, async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: root, timeout: 50_000 });
    expect(stdout).toMatch(/^trace [0-9a-f]{32}$/m);
    expect(stdout).toContain(
      [
        '└─ POST /checkout (INTERNAL)',
        '   └─ apply_async/shop.checkout (PRODUCER)',
        '      └─ run/shop.checkout (CONSUMER) SUCCESS',
        '         └─ apply_async/shop.receipt (PRODUCER)',
        '            └─ run/shop.receipt (CONSUMER) SUCCESS',
      ].join('\n'),
    );
  });

  it.skipIf(!ready)('continues a trace a Python Celery producer started', { timeout: 60_000 }, async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/main.ts', '--broker', `${brokerUrls.redis}/8`, '--python'], { cwd: root, timeout: 50_000 });
    expect(stdout).toContain(
      [
        '└─ run/shop.checkout (CONSUMER) SUCCESS ← a Python request span',
        '   └─ apply_async/shop.receipt (PRODUCER)',
        '      └─ run/shop.receipt (CONSUMER) SUCCESS',
      ].join('\n'),
    );
  });
});
