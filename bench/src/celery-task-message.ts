// A Celery protocol 2 task message as Celery (and kq) publish it, written out by hand for the benchmarks that send
// one without kq's worker on the path (the raw amqplib and ioredis runners, the transport-only AMQP bench).

/** The task's fields as protocol 2 carries them in message headers. */
export function celeryTaskHeaders(fields: { id: string; task: string; argsrepr: string; origin: string }): Record<string, unknown> {
  return {
    lang: 'py',
    task: fields.task,
    id: fields.id,
    shadow: null,
    eta: null,
    expires: null,
    group: null,
    group_index: null,
    retries: 0,
    timelimit: [null, null],
    root_id: fields.id,
    parent_id: null,
    argsrepr: fields.argsrepr,
    kwargsrepr: '{}',
    origin: fields.origin,
    ignore_result: false,
    replaced_task_nesting: 0,
    stamped_headers: null,
    stamps: {},
  };
}

/** Protocol 2's body: `[args, kwargs, embed]`. */
export function celeryTaskBody(args: readonly unknown[]): Buffer {
  return Buffer.from(JSON.stringify([args, {}, { callbacks: null, errbacks: null, chain: null, chord: null }]));
}

/**
 * The Kombu Redis envelope of a Celery task message, as Kombu (and kq) LPUSH it: the body base64 in JSON with the
 * protocol 2 headers and the properties — the bytes a Redis broker stores per task for Celery, so the raw LPUSH
 * baseline can send exactly what kq sends.
 */
export function celeryRedisEnvelope(fields: { id: string; task: string; args: readonly unknown[]; queue: string; origin: string }): string {
  const headers = celeryTaskHeaders({ id: fields.id, task: fields.task, argsrepr: `(${fields.args.map((arg) => JSON.stringify(arg)).join(', ')},)`, origin: fields.origin });
  return JSON.stringify({
    body: celeryTaskBody(fields.args).toString('base64'),
    'content-encoding': 'utf-8',
    'content-type': 'application/json',
    headers,
    properties: {
      correlation_id: fields.id,
      reply_to: fields.id,
      delivery_mode: 2,
      delivery_info: { exchange: '', routing_key: fields.queue },
      priority: 0,
      body_encoding: 'base64',
      delivery_tag: fields.id,
    },
  });
}
