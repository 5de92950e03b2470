"""Sends one task with Python Celery over sqla+postgresql and prints its outcome as JSON."""
import json
import sys

from celery_pg_app import app

spec = json.loads(sys.argv[1])
result = app.send_task(spec["name"], args=spec.get("args", []), kwargs=spec.get("kwargs", {}), **spec.get("options", {}))
try:
    print(json.dumps({"status": "SUCCESS", "result": result.get(timeout=spec.get("timeout", 30))}))
except Exception as exc:  # noqa: BLE001 - the test inspects whatever the remote side raised
    print(json.dumps({"status": result.state, "exc_type": type(exc).__name__, "exc": str(exc)}))
