"""Python side of the PostgreSQL interop tests: Celery 5 on Kombu's SQLAlchemy transport, tables named by the test."""
import os

from celery import Celery

app = Celery("kq_pg_interop", broker=os.environ["KQ_PG_BROKER"], backend=os.environ["KQ_PG_BACKEND"])
app.conf.broker_transport_options = {
    "queue_tablename": os.environ["KQ_PG_QUEUE_TABLE"],
    "message_tablename": os.environ["KQ_PG_MESSAGE_TABLE"],
}
app.conf.task_default_queue = os.environ["KQ_PG_PY_QUEUE"]
app.conf.worker_hijack_root_logger = False
app.conf.result_expires = 600


@app.task(name="pg.py_add")
def add(x, y):
    return x + y
