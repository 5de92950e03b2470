"""The Python Celery producer side of the benchmark: enqueue (timed), fill (setup) and round trips.

Started by bench/src/main.ts with the job in KQBENCH_SPEC (JSON, see bench/src/protocol.ts) and the app's settings
in KQBENCH_BROKER / KQBENCH_BACKEND / KQBENCH_QUEUE (see kqbench_celery.py). Prints one
``KQBENCH_RESULT <json>`` line. Celery has no bulk publish: apply_async on one held producer is its fastest way.
"""
import json
import os
import sys
import threading
import time

from kqbench_celery import app, noop


_go = threading.Event()


def _watch_stdin():
    # The orchestrator holds our stdin open: a "GO" line starts a waiting round trip; end of input means it went away.
    def watch():
        pending = b""
        while True:
            chunk = os.read(0, 4096)
            if not chunk:
                os._exit(2)
            pending += chunk
            if b"GO" in pending.split(b"\n"):
                _go.set()

    threading.Thread(target=watch, daemon=True).start()


def _report(result):
    sys.stdout.write("KQBENCH_RESULT %s\n" % json.dumps(result))
    sys.stdout.flush()


def enqueue(spec):
    with app.producer_or_acquire() as producer:
        producer.connection.ensure_connection(max_retries=3)
        start = time.perf_counter()
        for index in range(spec["n"]):
            noop.apply_async((index,), producer=producer)
        elapsed_ms = (time.perf_counter() - start) * 1000
    _report({"kind": "enqueue", "elapsedMs": elapsed_ms, "published": spec["n"]})


def round_trip(spec):
    latencies = []
    wrong = 0
    with app.producer_or_acquire() as producer:
        producer.connection.ensure_connection(max_retries=3)
        for index in range(spec["n"]):
            start = time.perf_counter()
            value = noop.apply_async((index,), producer=producer).get(timeout=30)
            latencies.append((time.perf_counter() - start) * 1000)
            if value != index:
                wrong += 1
    _report({"kind": "roundtrip", "latenciesMs": latencies, "wrong": wrong})


def main():
    _watch_stdin()
    spec = json.loads(os.environ["KQBENCH_SPEC"])
    if spec["role"] == "roundtrip":
        _go.wait()
    timer = threading.Timer(spec["timeoutMs"] / 1000, lambda: (sys.stderr.write("celery_client gave up\n"), os._exit(1)))
    timer.daemon = True
    timer.start()
    role = spec["role"]
    if role in ("enqueue", "fill"):
        enqueue(spec)
    elif role == "roundtrip":
        round_trip(spec)
    else:
        raise SystemExit("celery_client.py does not do %r; workers run as `celery -A kqbench_celery worker`" % role)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
