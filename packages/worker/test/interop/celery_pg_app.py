"""Python side of the PostgreSQL interop tests: Celery 5 on Kombu's SQLAlchemy transport (the URL picks the schema)."""
import os

from celery import Celery

app = Celery("kq_pg_interop", broker=os.environ["KQ_PG_BROKER"], backend=os.environ["KQ_PG_BACKEND"])
app.conf.task_default_queue = os.environ["KQ_PG_PY_QUEUE"]
app.conf.worker_hijack_root_logger = False
app.conf.result_expires = 600


@app.task(name="pg.py_add")
def add(x, y):
    return x + y
