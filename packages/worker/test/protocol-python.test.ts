// Python Celery reads what we encode: our messages go through Celery's own worker strategy and Request.execute().
// Skipped when /usr/bin/python3 has no celery module (it runs where python3-celery is installed).
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { encodeTaskMessage, type EncodeTaskOptions, type TaskMessageInit } from '../src/protocol/index';
import { fixturePath } from './fixtures/protocol/captures';

const PYTHON = '/usr/bin/python3';
const celeryAvailable = spawnSync(PYTHON, ['-c', 'import celery, kombu'], { stdio: 'ignore' }).status === 0;

interface PythonVerdict {
  error?: string;
  traceback?: string;
  status?: string;
  parsed?: Record<string, unknown>;
  seen?: { args: unknown[]; kwargs: Record<string, unknown>; request: Record<string, unknown> };
}

/** Runs every message through the Python script in one process (Celery's import is the slow part). */
function pythonReads(cases: Array<[TaskMessageInit, EncodeTaskOptions?]>): PythonVerdict[] {
  const lines = cases.map(([init, options]) => {
    const m = encodeTaskMessage(init, options);
    return JSON.stringify({
      headers: m.headers,
      properties: {
        correlation_id: m.properties.correlationId,
        reply_to: m.properties.replyTo,
        delivery_mode: m.properties.deliveryMode,
        priority: m.properties.priority,
        ...(m.properties.expiration === undefined ? {} : { expiration: m.properties.expiration }),
      },
      content_type: m.contentType,
      content_encoding: m.contentEncoding,
      body_b64: m.body.toString('base64'),
    });
  });
  const run = spawnSync(PYTHON, [fixturePath('celery-reads-kq-messages.py')], { input: lines.join('\n'), encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) throw new Error(`python failed (${run.status}): ${run.stderr}`);
  return run.stdout.trim().split('\n').map((line) => JSON.parse(line) as PythonVerdict);
}

const link = (args: unknown[]) => ({ task: 'kqcheck.echo', args, kwargs: {}, options: { task_id: `link-${String(args[0])}` }, subtask_type: null, immutable: false });

describe.skipIf(!celeryAvailable)('Python Celery 5 worker code reads kq task messages', () => {
  const future = new Date(Date.now() + 3_600_000);
  const later = new Date(Date.now() + 7_200_000);
  const cases: Array<[TaskMessageInit, EncodeTaskOptions?]> = [
    [{ id: 'py-minimal', name: 'kqcheck.echo', args: [2, 2] }],
    [
      {
        id: 'py-full',
        name: 'kqcheck.echo',
        args: [1, 'héllo ✓ 𝄞', null, true, [1, { a: 'b' }], 0.5],
        kwargs: { k: 'v', nested: { list: [1, 2] } },
        eta: future,
        expires: later,
        retries: 2,
        timeLimit: 30,
        softTimeLimit: 20,
        rootId: 'root-1',
        parentId: 'parent-1',
        group: 'group-1',
        groupIndex: 3,
        shadow: 'echo-shadow',
        callbacks: [link(['cb'])],
        chain: [link(['chained'])],
        headers: { tenant: 'acme' },
        replyTo: 'reply-oid',
        priority: 7,
      },
      { compression: 'zlib' },
    ],
    [{ id: 'py-kwargs-only', name: 'kqcheck.echo', kwargs: { x: 1, y: 2 }, ignoreResult: true }, { modernHeaders: false }],
  ];

  it('builds the same Request and runs the task with the same arguments', () => {
    const [minimal, full, kwargsOnly] = pythonReads(cases);
    for (const verdict of [minimal, full, kwargsOnly]) expect(verdict?.error, verdict?.traceback).toBeUndefined();

    expect(minimal).toMatchObject({
      status: 'SUCCESS',
      parsed: { id: 'py-minimal', name: 'kqcheck.echo', argsrepr: '(2, 2)', kwargsrepr: '{}', eta: null, time_limits: [null, null], root_id: 'py-minimal', reply_to: '' },
      seen: { args: [2, 2], kwargs: {} },
    });

    expect(full).toMatchObject({
      status: 'SUCCESS',
      parsed: {
        id: 'py-full',
        name: 'echo-shadow',
        type: 'kqcheck.echo',
        eta: future.toISOString().replace('Z', '000+00:00'),
        expires: later.toISOString().replace('Z', '000+00:00'),
        time_limits: [30, 20],
        root_id: 'root-1',
        parent_id: 'parent-1',
        reply_to: 'reply-oid',
        correlation_id: 'py-full',
      },
      seen: {
        args: [1, 'héllo ✓ 𝄞', null, true, [1, { a: 'b' }], 0.5],
        kwargs: { k: 'v', nested: { list: [1, 2] } },
        request: {
          retries: 2,
          group: 'group-1',
          group_index: 3,
          timelimit: [30, 20],
          tenant: 'acme',
          callbacks: [link(['cb'])],
          chain: [link(['chained'])],
          delivery_info: { priority: 7 },
        },
      },
    });

    expect(kwargsOnly).toMatchObject({ status: 'PENDING', parsed: { ignore_result: true }, seen: { args: [], kwargs: { x: 1, y: 2 } } });
  });
});
