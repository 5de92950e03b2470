"""Sends one task with Python Celery and prints its outcome as JSON: {"status", "result"} or {"status", "exc_type", "exc"}."""
import json
import sys
import time

from celery_app import app

spec = json.loads(sys.argv[1])
options = spec.get("options", {})
started = time.time()
result = app.send_task(spec["name"], args=spec.get("args", []), kwargs=spec.get("kwargs", {}), **options)
try:
    value = result.get(timeout=spec.get("timeout", 20))
    print(json.dumps({"status": result.state, "result": value, "elapsed": time.time() - started}))
except Exception as exc:  # noqa: BLE001 - the test inspects whatever the remote side raised
    print(json.dumps({"status": result.state, "exc_type": type(exc).__name__, "exc": str(exc), "elapsed": time.time() - started}))
