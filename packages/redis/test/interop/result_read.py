"""Reads task results with Python Celery's AsyncResult.get(), for kq's Redis result backend interop tests.

Usage: result_read.py <backend url> <timeout seconds> <task id>...
Prints one JSON line per task id: {"id", "ok": true, "value", "state"} or
{"id", "ok": false, "type", "module", "args", "state"} when get() raised.
"""
import json
import sys

from celery import Celery


def plain(value):
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def main():
    url, timeout, ids = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    app = Celery('kq_result_interop', backend=url, broker='memory://')
    for task_id in ids:
        result = app.AsyncResult(task_id)
        try:
            value = result.get(timeout=timeout)
            out = {'id': task_id, 'ok': True, 'value': plain(value), 'state': result.state}
        except Exception as exc:  # noqa: BLE001 - reported to the test
            out = {
                'id': task_id,
                'ok': False,
                'type': type(exc).__name__,
                'module': type(exc).__module__,
                'args': [plain(arg) for arg in exc.args],
                'state': result.state,
            }
        print(json.dumps(out), flush=True)


if __name__ == '__main__':
    main()
