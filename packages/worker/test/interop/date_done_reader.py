"""Reads a result's date_done as Celery code does (AsyncResult.date_done) and subtracts it from datetime.utcnow(),
the naive arithmetic Celery 5.2-era code does. Prints {"age": seconds} or {"exc_type", "exc"}."""
import datetime
import json
import os
import sys

from celery import Celery

app = Celery("kq_date_done", backend=os.environ["KQ_INTEROP_BACKEND"])
result = app.AsyncResult(json.loads(sys.argv[1])["id"])
try:
    age = datetime.datetime.utcnow() - result.date_done
    print(json.dumps({"age": age.total_seconds()}))
except Exception as exc:  # noqa: BLE001 - the test inspects what Python raised
    print(json.dumps({"exc_type": type(exc).__name__, "exc": str(exc)}))
