// A Celery protocol 2 task message as Celery (and kq) publish it, written out by hand for the benchmarks that send
// one without kq's worker on the path (the raw amqplib runner, the transport-only AMQP bench).

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
