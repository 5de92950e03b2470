"""A bare Celery app for the mailbox interop tests: a Python worker whose control namespace and queue the test picks."""
import os

from celery import Celery

app = Celery("mailbox_interop", broker=os.environ["KQ_INTEROP_BROKER"])
app.conf.control_exchange = os.environ.get("KQ_INTEROP_NAMESPACE", "celery")
app.conf.task_default_queue = os.environ.get("KQ_INTEROP_QUEUE", "celery")
app.conf.worker_hijack_root_logger = False
