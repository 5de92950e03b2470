import { pythonRepr, type ResultBackend, type ResultTuple, type TaskState } from '@kq/core';
import { runAsCurrentTask } from '../send/current-task';
import { ChordError, TaskFailedError } from '../errors/errors';
import { type SignatureJson } from '../protocol/index';
import { exceptionInfo, formatDateDone, GroupResult, resultFromTuple } from '../results/index';
import type { CanvasAppView } from '../contract/app-contract';
import { Chain } from './chain';
import type { ErrbackCaller } from './errback-caller';
import { Group } from './group';
import { Signature, type AnySignature } from './signature';
import { describeError } from '../errors/describe-error';

/** What finishing a chord part needs of the finished task's request. */
export interface ChordMember {
  readonly id: string;
  readonly group: string | null;
  readonly groupIndex: number | null;
  readonly chord: SignatureJson | null;
  /** The finished task's root, for a body that has none of its own. */
  readonly rootId?: string | null;
}

/** States whose result fails the chord (Celery's PROPAGATE_STATES). */
const PROPAGATE_STATES: ReadonlySet<TaskState> = new Set(['FAILURE', 'REVOKED']);

/**
 * Celery's `on_chord_part_return` for backends with a native join: records the part and, when it was the last one,
 * sends the body with every result in group order — or, if a part failed, fails the body with `ChordError` and
 * sends its errbacks. Exactly one finisher (kq or Python) gets to do this. Errors are reported through `log`, never
 * thrown: the task itself already finished.
 */
export async function onChordPartReturn(
  app: CanvasAppView,
  member: ChordMember,
  state: TaskState,
  result: unknown,
  log: (message: string) => void,
  /** Calls the body's new-style errbacks in-process, when the chord fails here. */
  callErrbacks?: ErrbackCaller,
): Promise<void> {
  const groupId = member.group;
  if (!groupId || !member.chord) return;
  const backend = await app.backend();
  if (!backend?.chordJoin) return; // joined by celery.chord_unlock instead
  const parts = await backend.chordJoin.addPart(groupId, { taskId: member.id, state, result }, member.groupIndex, app.conf.resultExpires * 1000);
  if (!parts) return;
  const callback = Signature.fromJSON(member.chord, app);
  let values: unknown[];
  try {
    const saved = backend.groups ? await backend.groups.restoreGroup(groupId) : null;
    if (saved) {
      // A header with nested groups was saved by the sender: join it for the nested shape.
      const header = resultFromTuple(saved, backend);
      values = header instanceof GroupResult ? await header.join() : [await header.get()];
    } else {
      values = parts.map((part) => {
        if (PROPAGATE_STATES.has(part.state)) throw new ChordError(`Dependency ${part.taskId} raised ${exceptionRepr(part.result)}`, { cause: part.result });
        return part.result;
      });
    }
  } catch (error) {
    log(`Chord ${groupId} raised: ${describeError(error)}`);
    await failChord(app, backend, callback, error instanceof ChordError ? error : new ChordError(`Join error: ${errorRepr(error)}`), log, callErrbacks);
    return;
  }
  // Celery sends the body from inside the header task that completed the join (its current worker task), so what
  // the body does not name itself takes that task as parent: the first step of a chain body, for one.
  const sender = { request: { id: member.id, rootId: member.rootId ?? null }, children: [] };
  await runAsCurrentTask(sender, () => sendChordBody(app, backend, callback, values, log));
}

/** Sends the body with the header's results; if it cannot be sent, fails it (Celery: `Callback error: ...`). */
export async function sendChordBody(app: CanvasAppView, backend: ResultBackend, callback: AnySignature, values: unknown[], log: (message: string) => void): Promise<void> {
  try {
    await callback.applyWire([values], {}, {});
  } catch (error) {
    log(`Chord callback ${callback.task} raised: ${describeError(error)}`);
    await failChord(app, backend, callback, new ChordError(`Callback error: ${errorRepr(error)}`), log);
  }
}

/**
 * Celery's `chord_error_from_stack`: the body's errbacks are sent as one group with its id, and FAILURE(ChordError) is
 * stored as the body's result with that group as its children (Celery stores the trail of the task it runs in, which
 * the group just joined), so whoever waits on the chord learns why, and can follow the errbacks.
 */
export async function failChord(
  app: CanvasAppView,
  backend: ResultBackend,
  callback: AnySignature,
  error: ChordError,
  log: (message: string) => void,
  callErrbacks?: ErrbackCaller,
): Promise<void> {
  if (callback instanceof Group) return failGroupBody(app, backend, callback, error, log);
  const bodyId = callback.id ?? (callback instanceof Chain ? callback.tasks[callback.tasks.length - 1]?.id : undefined);
  const errbacks = callback.options['link_error'];
  const children: ResultTuple[] = [];
  if (Array.isArray(errbacks) && errbacks.length > 0) {
    try {
      let signatures = errbacks.map((errback) => (errback instanceof Signature ? errback : Signature.fromJSON(errback as SignatureJson, app)));
      if (callErrbacks && bodyId) {
        // Celery's best-effort request for the body, which never ran: its id, task and arguments.
        const request = { id: bodyId, name: callback.task, args: callback.args, kwargs: callback.kwargs, rootId: null, parentId: null, group: null };
        signatures = await callErrbacks(signatures, request, error, null);
      }
      if (signatures.length > 0) {
        const sent = await new Group(signatures, {}, app).applyWire(bodyId ? [bodyId] : [], {}, bodyId ? { parent_id: bodyId, root_id: bodyId } : {});
        children.push(sent.asTuple());
      }
    } catch (sendError) {
      log(`Could not send the errbacks of chord body ${callback.task}: ${describeError(sendError)}`);
    }
  }
  if (!bodyId) return;
  try {
    await backend.store(
      { status: 'FAILURE', result: exceptionInfo(error), traceback: null, children, date_done: formatDateDone(new Date(), app.conf.resultDateDone), task_id: bodyId },
      { expiresMs: app.conf.resultExpires * 1000 },
    );
  } catch (storeError) {
    log(`Could not store the failure of chord body ${callback.task}[${bodyId}]: ${describeError(storeError)}`);
  }
}

/**
 * Celery 5.6's `_handle_group_chord_error`: a group body never runs, so its tasks are revoked and each stores the
 * header's original failure (not the ChordError), as does the group's id; the group's errbacks are sent for each
 * task. Without it whoever waits on the body's results waits forever.
 */
async function failGroupBody(app: CanvasAppView, backend: ResultBackend, body: Group, error: ChordError, log: (message: string) => void): Promise<void> {
  const original = isExceptionInfo(error.cause) ? error.cause : exceptionInfo(error);
  const frozen = body.freeze();
  await frozen.revoke().catch((revokeError: unknown) => log(`Could not revoke the tasks of chord body group ${frozen.id}: ${describeError(revokeError)}`));
  const errbacks = body.options['link_error'];
  const date = (): string => formatDateDone(new Date(), app.conf.resultDateDone);
  for (const id of [...frozen.results.map((result) => result.id), frozen.id]) {
    if (Array.isArray(errbacks) && errbacks.length > 0 && id !== frozen.id) {
      const signatures = errbacks.map((errback) => (errback instanceof Signature ? errback : Signature.fromJSON(errback as SignatureJson, app)));
      await new Group(signatures, {}, app).applyWire([id], {}, { parent_id: id, root_id: id }).catch((sendError: unknown) => log(`Could not send the errbacks of ${id}: ${describeError(sendError)}`));
    }
    await backend
      .store({ status: 'FAILURE', result: original, traceback: null, children: [], date_done: date(), task_id: id }, { expiresMs: app.conf.resultExpires * 1000 })
      .catch((storeError: unknown) => log(`Could not store the failure of chord body task ${id}: ${describeError(storeError)}`));
  }
}

function isExceptionInfo(value: unknown): value is { exc_type: string; exc_message: unknown[]; exc_module?: string } {
  return typeof value === 'object' && value !== null && typeof (value as { exc_type?: unknown }).exc_type === 'string';
}

/** Python's `repr(exc)` of a stored exception: `ZeroDivisionError('division by zero')`. */
export function exceptionRepr(info: unknown): string {
  if (typeof info === 'object' && info !== null && typeof (info as { exc_type?: unknown }).exc_type === 'string') {
    const { exc_type: type, exc_message: args } = info as { exc_type: string; exc_message?: unknown };
    const list = Array.isArray(args) ? args : args === undefined || args === null ? [] : [args];
    return `${type}(${list.map((arg) => pythonRepr(arg)).join(', ')})`;
  }
  return pythonRepr(info);
}

/** Python's `repr(exc)` of an error raised here. */
export function errorRepr(error: unknown): string {
  if (error instanceof TaskFailedError) return `${error.excType}(${error.excMessage.map((arg) => pythonRepr(arg)).join(', ')})`;
  return exceptionRepr(exceptionInfo(error));
}
