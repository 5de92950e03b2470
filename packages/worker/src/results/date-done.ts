import type { DateDoneForm } from '../config/config';
import { ImproperlyConfigured } from '../errors/errors';
import { formatIsoDate } from '../protocol/index';

const FORMS: readonly DateDoneForm[] = ['aware', 'naive'];

/**
 * A result's `date_done` in the form the app is set to write (`resultDateDone`): Celery 5.4+'s aware
 * `…+00:00`, or Celery 5.2's naive `datetime.utcnow().isoformat()` — the same UTC instant without the offset.
 */
export function formatDateDone(date: Date, form: DateDoneForm): string {
  const aware = formatIsoDate(date);
  return form === 'naive' ? aware.slice(0, -'+00:00'.length) : aware;
}

/** Refuses a `resultDateDone` that is neither form, at start-up rather than at the first stored result. */
export function assertDateDoneForm(form: unknown): asserts form is DateDoneForm {
  if (!FORMS.includes(form as DateDoneForm)) {
    throw new ImproperlyConfigured(
      `resultDateDone must be 'aware' (Celery 5.3+, the default) or 'naive' (Celery 5.2's form), not ${JSON.stringify(form)}.`,
    );
  }
}
