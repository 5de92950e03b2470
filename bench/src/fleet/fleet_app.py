# The app every Python fleet worker runs (the anchor): one task, no result backend, Celery's default settings.
import os

from celery import Celery

app = Celery('fleet', broker=os.environ['KQ_BROKER_URL'])


@app.task(name='fleet.noop')
def noop():
    return None
