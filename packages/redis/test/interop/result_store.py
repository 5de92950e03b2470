"""Stores task results with Python Celery's Redis backend, for kq's result backend interop tests.

Usage: result_store.py <backend url> <success task id> <failure task id>
Stores SUCCESS {"a": 1} for the first id and a FAILURE (ValueError('boom'), with its traceback) for the second.
"""
import sys
import traceback

from celery import Celery


def main():
    url, success_id, failure_id = sys.argv[1:4]
    app = Celery('kq_result_interop', backend=url, broker='memory://')
    app.backend.store_result(success_id, {'a': 1}, 'SUCCESS')
    try:
        raise ValueError('boom')
    except ValueError as exc:
        app.backend.mark_as_failure(failure_id, exc, traceback=traceback.format_exc())
    print('stored', flush=True)


if __name__ == '__main__':
    main()
