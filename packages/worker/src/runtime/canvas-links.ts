import type { TaskState } from '@kq/core';
import type { AppContract } from '../contract/app-contract';
import { Group, onChordPartReturn, Signature, type AnySignature, type ErrbackCaller } from '../canvas/index';
import type { Logger } from '../log/logger';
import { type SignatureJson, type TaskMessage } from '../protocol/index';
import { formatDateDone } from '../results/index';
import { TaskContext, type Task } from '../task/task';
import type { TaskRequest } from '../task/task-request';
import { describeError } from '../errors/describe-error';

/*
 * What a finished task sends on, exactly as Celery's tracer does: callbacks and the next chain step with its result,
 * errbacks with its id, and its part of a chord. Every signature keeps all its options (queue, routing, priority,
 * countdown...), and composite ones (group, chain, chord) are applied as what they are, so a kq worker forwards a
 * Python canvas as a Python worker would. Nothing here throws: the task already finished; failures are logged.
 */

/** Sends the callbacks (`link`) and the next chain step with the task's return value. */
export async function sendCallbacks(app: AppContract, log: Logger, message: TaskMessage, value: unknown): Promise<void> {
  const parent = { parent_id: message.id, root_id: message.rootId ?? message.id };
  const callbacks = message.callbacks ?? [];
  try {
    if (callbacks.length > 1) {
      // Several callbacks: groups applied each on their own, the plain ones together as one group (Celery #1936).
      const plain: AnySignature[] = [];
      for (const json of callbacks) {
        const signature = Signature.fromJSON(json, app);
        if (signature instanceof Group) await signature.applyWire([value], {}, parent);
        else plain.push(signature);
      }
      if (plain.length > 0) await new Group(plain, {}, app).applyWire([value], {}, parent);
    } else if (callbacks.length === 1) {
      await Signature.fromJSON(callbacks[0] as SignatureJson, app).applyWire([value], {}, parent);
    }
    const chain = message.chain;
    if (chain && chain.length > 0) {
      const next = Signature.fromJSON(chain[chain.length - 1] as SignatureJson, app);
      await next.applyWire([value], {}, { ...parent, chain: chain.slice(0, -1) });
    }
  } catch (error) {
    log.error(`Could not send the callbacks of ${message.name}[${message.id}]: ${describeError(error)}`);
  }
}

/**
 * Runs the errbacks (`link_error`) of a failed task: the new-style ones (`errbackWithRequest`) are called here with
 * the failed request, the others sent as one group with the failed task's id (Celery's old-style errbacks).
 */
export async function sendErrbacks(app: AppContract, log: Logger, message: TaskMessage, failure?: { request: TaskRequest; error: unknown; traceback: string | null }): Promise<void> {
  const errbacks = message.errbacks ?? [];
  if (errbacks.length === 0) return;
  try {
    let signatures = errbacks.map((json) => Signature.fromJSON(json, app));
    if (failure) signatures = await errbackCaller(app, log, failure.request)(signatures, failure.request, failure.error, failure.traceback);
    if (signatures.length === 0) return;
    await new Group(signatures, {}, app).applyWire([message.id], {}, { parent_id: message.id, root_id: message.rootId ?? message.id });
  } catch (error) {
    log.error(`Could not send the errbacks of ${message.name}[${message.id}]: ${describeError(error)}`);
  }
}

/**
 * Celery's `_call_task_errbacks` for errbacks registered here as new-style (`errbackWithRequest`): each is called in
 * this worker, in the failed task's run, as `fn(ctx, request, exc, traceback, ...its own args)`; its return value is
 * not stored (Celery calls the function, it does not send a task). The rest are returned, to be sent.
 */
export function errbackCaller(app: AppContract, log: Logger, running: TaskRequest): ErrbackCaller {
  return async (errbacks, request, error, traceback) => {
    const toSend: AnySignature[] = [];
    for (const errback of errbacks) {
      const task = app.tasks.get(errback.task) as Task | undefined;
      if (!task?.options.errbackWithRequest) {
        toSend.push(errback);
        continue;
      }
      const call: TaskRequest = { ...running, name: task.name, args: [request, error, traceback, ...errback.args], kwargs: errback.kwargs };
      try {
        await task.invoke(new TaskContext(app, task, call, new AbortController().signal, log));
      } catch (errbackError) {
        log.error(`Errback ${task.name} of ${request.name}[${request.id}] raised: ${describeError(errbackError)}`);
      }
    }
    return toSend;
  };
}

/** Records the task's part of its chord (when it is in one); the last part sends the chord's body. */
export async function chordPartReturn(app: AppContract, log: Logger, message: TaskMessage, state: TaskState, result: unknown, running?: TaskRequest): Promise<void> {
  if (!message.chord || !message.group) return;
  try {
    await onChordPartReturn(
      app,
      { id: message.id, group: message.group, groupIndex: message.groupIndex, chord: message.chord, rootId: message.rootId },
      state,
      result,
      (line) => log.error(line),
      // A chord that fails here calls its body's new-style errbacks here, in the run of the part that failed it.
      running ? errbackCaller(app, log, running) : undefined,
    );
  } catch (error) {
    log.error(`Could not record ${message.name}[${message.id}] in chord ${message.group}: ${describeError(error)}`);
  }
}

/**
 * Celery's `mark_as_failure` for the rest of a chain: the steps that will now never run are stored with the same
 * failure (so a caller waiting on the chain's last result learns of it), and a step that was a chord's part records
 * its part, so the chord does not wait forever.
 */
export async function failRemainingChain(
  app: AppContract,
  log: Logger,
  message: TaskMessage,
  state: TaskState,
  info: unknown,
  traceback: string | null,
  running?: TaskRequest,
): Promise<void> {
  const chain = message.chain ?? [];
  if (chain.length === 0) return;
  const backend = await app.backend().catch(() => null);
  for (const step of chain) {
    const options = step.options ?? {};
    const taskId = typeof options['task_id'] === 'string' ? options['task_id'] : undefined;
    try {
      if (backend && taskId && (state === 'FAILURE' || state === 'REVOKED')) {
        await backend.store(
          { status: state, result: info, traceback, children: [], date_done: formatDateDone(new Date(), app.conf.resultDateDone), task_id: taskId },
          { expiresMs: app.conf.resultExpires * 1000 },
        );
      }
      const chord = options['chord'];
      const groupId = typeof options['group_id'] === 'string' ? options['group_id'] : null;
      if (taskId && chord && typeof chord === 'object') {
        await onChordPartReturn(
          app,
          {
            id: taskId,
            group: groupId,
            groupIndex: typeof options['group_index'] === 'number' ? options['group_index'] : null,
            chord: chord as SignatureJson,
            rootId: typeof options['root_id'] === 'string' ? options['root_id'] : null,
          },
          state,
          info,
          (line) => log.error(line),
          running ? errbackCaller(app, log, running) : undefined,
        );
      }
    } catch (error) {
      log.error(`Could not fail chain step ${step.task}[${taskId ?? '?'}] after ${message.name}[${message.id}]: ${describeError(error)}`);
    }
  }
}
