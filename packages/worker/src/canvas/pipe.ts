import { Chain } from './chain';
import { Chord } from './chord';
import { Group } from './group';
import type { AnySignature } from './signature';

/**
 * `left | right` as Celery composes it: a chain grows, a group followed by a task becomes a chord, a chord's body
 * takes the task on, a one-member group is unrolled.
 */
export function pipe(left: AnySignature, right: AnySignature): AnySignature {
  const next = right instanceof Group ? right.unrollSingle() : right;
  if (left instanceof Chord && !(next instanceof Group) && !(next instanceof Chain)) {
    const copy = left.clone();
    copy.body = pipe(copy.body, next);
    return copy;
  }
  if (left instanceof Group) {
    return new Chord(left, next, {}, left.app);
  }
  if (left instanceof Chain) {
    const tasks = left.unchainTasks();
    if (next instanceof Chain) return new Chain([...tasks, ...next.unchainTasks()], {}, left.app);
    if (!(next instanceof Group)) {
      const last = tasks[tasks.length - 1];
      if (last instanceof Group) return new Chain([...tasks.slice(0, -1), new Chord(last, next, {}, left.app)], {}, left.app);
      if (last instanceof Chord) {
        last.body = pipe(last.body, next);
        return new Chain(tasks, {}, left.app);
      }
    }
    return new Chain([...tasks, next], {}, left.app);
  }
  if (next instanceof Chain) return new Chain([left, ...next.unchainTasks()], {}, left.app);
  return new Chain([left, next], {}, left.app);
}
