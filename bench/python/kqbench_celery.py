"""The Celery app the benchmark runs Python workers and producers with (a fixture module: ``celery -A kqbench_celery``).

Configured from the environment so one module serves every case:
  KQBENCH_BROKER   broker URL (the benchmark's Redis DB)
  KQBENCH_BACKEND  result backend URL, or empty for none (W1/W2 store no results)
  KQBENCH_QUEUE    the queue tasks are sent to and consumed from
Acks are late, as kq's are in the drain and round-trip workloads, so both ack after the task ran.
"""
import os
import signal
import sys
import threading
import time

from celery import Celery
from celery.signals import worker_init, worker_ready

QUEUE = os.environ.get("KQBENCH_QUEUE", "kqbench.python")
BACKEND = os.environ.get("KQBENCH_BACKEND") or None

app = Celery("kqbench", broker=os.environ.get("KQBENCH_BROKER", "redis://127.0.0.1:6379/15"), backend=BACKEND)
app.conf.update(
    task_default_queue=QUEUE,
    task_acks_late=True,
    task_ignore_result=BACKEND is None,
    worker_prefetch_multiplier=4,
    worker_hijack_root_logger=False,
    worker_redirect_stdouts=False,
    broker_connection_retry=True,
    result_expires=3600,
)


@app.task(name="kqbench.noop")
def noop(i):
    return i


def _announce(what):
    # The parent reads these lines: the time the worker began starting (its clock start for the drain) and ready.
    sys.stdout.write("KQBENCH_%s %.3f\n" % (what, time.time() * 1000))
    sys.stdout.flush()


def _exit_with_orchestrator():
    # The orchestrator holds our stdin open; if it dies without stopping us, take the whole worker (pool included) down.
    # os.read on the descriptor, not sys.stdin: a thread blocked in sys.stdin.read() holds its lock, and a prefork
    # child (forked while it is held) deadlocks when billiard closes sys.stdin.
    def watch():
        while os.read(0, 4096):
            pass
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True).start()


@worker_init.connect
def _on_worker_init(**_kwargs):
    _announce("STARTING")
    if os.environ.get("KQBENCH_SPEC"):
        _exit_with_orchestrator()


@worker_ready.connect
def _on_worker_ready(**_kwargs):
    _announce("READY")
