"""The Celery app the kq cluster interop tests run a real Python worker, `celery inspect` and `celery events` with.

Everything that could collide with other test runs on the same broker comes from the environment: the broker URL,
the control exchange (pidbox namespace), the event exchange and the default queue.
"""
import os
import time

from celery import Celery

app = Celery("kq_cluster_interop", broker=os.environ['KQ_INTEROP_BROKER'])
app.conf.update(
    control_exchange=os.environ.get('KQ_INTEROP_CONTROL', 'celery'),
    event_exchange=os.environ.get('KQ_INTEROP_EVENTS', 'celeryev'),
    task_default_queue=os.environ.get('KQ_INTEROP_QUEUE', 'celery'),
    broker_connection_retry_on_startup=True,
    worker_prefetch_multiplier=1,
)


@app.task(name='interop.add')
def add(x, y):
    return x + y


@app.task(name='interop.sleepy')
def sleepy(seconds):
    time.sleep(seconds)
    return seconds


@app.task(name='interop.fail')
def fail():
    raise ValueError('python says no')


@app.task(bind=True, name='interop.retry_once', max_retries=1)
def retry_once(self):
    if self.request.retries == 0:
        raise self.retry(countdown=0.1)
    return self.request.retries
