"""Builds one canvas with Python Celery, steps pinned to kq's and Python's queues, applies it and prints the outcome.

Usage: canvas_client.py '{"case": "<name>", "timeout": 20}' (errbacks write to $KQ_INTEROP_MARKER). Prints {"status", "result"} or
{"status", "exc_type", "exc"} as its last line.
"""
import json
import os
import sys
import time

from celery import chain, chord, group
from celery.canvas import chunks, xmap, xstarmap

from celery_app import app

spec = json.loads(sys.argv[1])
KQ = os.environ["KQ_INTEROP_KQ_QUEUE"]
PY = os.environ["KQ_INTEROP_PY_QUEUE"]


def kq(name, *args, **options):
    return app.signature(f"interop.kq_{name}", args=args, queue=KQ, **options)


def py(name, *args, **options):
    return app.signature(f"interop.py_{name}", args=args, queue=PY, **options)


def failing_chord():
    body = py("tsum")
    body.link_error(py("errback"))
    return chord([kq("add", 1, 1), kq("fail"), py("add", 2, 2)], body)


def kq_failing_chord():
    body = kq("tsum")
    body.link_error(kq("errback"))
    return chord([py("add", 1, 1), py("fail"), kq("add", 2, 2)], body)


CASES = {
    "chain": lambda: chain(kq("add", 2, 2), py("add", 4), kq("mul", 10)),
    "group": lambda: group(kq("add", 1, 1), py("add", 2, 2), kq("add", 3, 3)),
    "chord": lambda: chord([kq("add", i, i) for i in range(5)] + [py("add", i, i) for i in range(5)], kq("tsum")),
    "chord_py_body": lambda: chord([kq("add", i, i) for i in range(6)], py("tsum")),
    "chain_group_upgrade": lambda: chain(kq("add", 1, 1), group(py("add", 1), kq("add", 2)), kq("tsum"), py("mul", 3)),
    "chord_in_chain": lambda: chain(chord([kq("add", 1, 1), py("add", 2, 2)], kq("tsum")), py("add", 100)),
    "group_of_chains": lambda: group(chain(kq("add", 1, 1), py("add", 1)), chain(py("add", 2, 2), kq("add", 2))),
    "chord_of_chords": lambda: chord([chord([kq("add", 1, 1), py("add", 1, 1)], kq("tsum")), chord([py("add", 2, 2), kq("add", 2, 2)], py("tsum"))], kq("tsum")),
    "chord_failure": failing_chord,
    "kq_chord_failure": kq_failing_chord,
    "link": lambda: kq("add", 5, 5, link=py("errback")),
    "link_error": lambda: kq("fail", link_error=py("errback")),
    "chunks": lambda: chunks(kq("add"), [(i, i) for i in range(5)], 2),
    "map": lambda: xmap(kq("tsum"), [[1, 2], [3, 4]]),
    "starmap": lambda: xstarmap(kq("add"), [(1, 2), (3, 4)]),
    "replace": lambda: py("replace", 4) | kq("add", 1),
}

if spec["case"] == "children":
    # A kq task that sent tasks: Python's AsyncResult.children lists them, and they can be read.
    result = app.send_task("interop.kq_spawn", args=(3,), queue=KQ)
    result.get(timeout=spec.get("timeout", 30))
    children = result.children or []
    print(json.dumps({"status": result.state, "result": [child.get(timeout=30) for child in children]}))
    sys.exit(0)

canvas = CASES[spec["case"]]()
options = {"queue": KQ} if spec["case"] in ("chunks", "map", "starmap") else {}
result = canvas.apply_async(**options)
try:
    value = result.get(timeout=spec.get("timeout", 30))
    print(json.dumps({"status": getattr(result, "state", "SUCCESS"), "result": value}))
except Exception as exc:  # noqa: BLE001 - the test inspects whatever the remote side raised
    # Celery's get() re-raises a failed parent's error; what the task itself stored is read apart.
    meta = app.backend.get_task_meta(result.id)
    for _ in range(100):
        if meta["status"] in ("SUCCESS", "FAILURE", "REVOKED"):
            break
        time.sleep(0.1)
        meta = app.backend.get_task_meta(result.id)
    stored = meta.get("result")
    print(json.dumps({
        "status": getattr(result, "state", "?"),
        "exc_type": type(exc).__name__,
        "exc": str(exc),
        "stored_status": meta["status"],
        "stored_exc_type": type(stored).__name__ if isinstance(stored, BaseException) else None,
        "stored_exc": str(stored) if isinstance(stored, BaseException) else None,
    }))
