/** Which worker runs the tasks: kq (under test) or Python Celery of the same version (the baseline). */
export type WorkerKind = 'kq' | 'celery';
