"""Python side of the worker interop tests: a Celery 5 app with a few tasks, configured from the environment."""
import os

from celery import Celery

app = Celery(
    "kq_interop",
    broker=os.environ["KQ_INTEROP_BROKER"],
    backend=os.environ["KQ_INTEROP_BACKEND"],
)
app.conf.task_default_queue = os.environ["KQ_INTEROP_PY_QUEUE"]
app.conf.control_exchange = os.environ.get("KQ_INTEROP_NAMESPACE", "celery")
app.conf.worker_hijack_root_logger = False
app.conf.result_expires = 600
app.conf.result_extended = os.environ.get("KQ_INTEROP_RESULT_EXTENDED") == "1"
app.conf.event_exchange = os.environ.get("KQ_INTEROP_EVENT_EXCHANGE", "celeryev")

def _ssl_options(variable):
    """broker_use_ssl / redis_backend_use_ssl from JSON, with cert_reqs given by name (CERT_REQUIRED)."""
    import json
    import ssl

    options = json.loads(os.environ[variable])
    for name in ("ssl_cert_reqs", "cert_reqs"):
        if isinstance(options.get(name), str):
            options[name] = getattr(ssl, options[name])
    return options


if os.environ.get("KQ_INTEROP_BROKER_USE_SSL"):
    app.conf.broker_use_ssl = _ssl_options("KQ_INTEROP_BROKER_USE_SSL")
if os.environ.get("KQ_INTEROP_BACKEND_USE_SSL"):
    app.conf.redis_backend_use_ssl = _ssl_options("KQ_INTEROP_BACKEND_USE_SSL")
if os.environ.get("KQ_INTEROP_ACCEPT"):
    app.conf.accept_content = os.environ["KQ_INTEROP_ACCEPT"].split(",")
if os.environ.get("KQ_INTEROP_SECURITY_DIR"):
    # Message signing as Celery's docs set it up: tasks signed with the auth serializer and only signed ones accepted.
    # Results stay JSON (kq stores them so), which the result backend would refuse under accept_content=['auth'].
    security = os.environ["KQ_INTEROP_SECURITY_DIR"]
    app.conf.update(
        security_key=os.path.join(security, "worker.key"),
        security_certificate=os.path.join(security, "store", "worker.pem"),
        security_cert_store=os.path.join(security, "store", "*.pem"),
        task_serializer="auth",
        accept_content=["auth"],
        result_accept_content=["json"],
    )
    app.setup_security()


@app.task(name="interop.py_add")
def add(x, y):
    return x + y


@app.task(name="interop.py_fail")
def fail():
    raise ValueError("python says no")


@app.task(bind=True, name="interop.py_retry", max_retries=3)
def flaky(self):
    if self.request.retries < 2:
        raise self.retry(countdown=0.2)
    return self.request.retries

if os.environ.get("KQ_INTEROP_VISIBILITY_TIMEOUT"):
    # How soon Kombu's restore (run by a Python worker) takes back what a dead worker held.
    app.conf.broker_transport_options = {"visibility_timeout": float(os.environ["KQ_INTEROP_VISIBILITY_TIMEOUT"])}


@app.task(name="interop.mark")
def mark(path, value):
    """Records that Python ran it (the ETA fleet tests count runs per side)."""
    with open(path, "a", encoding="utf-8") as marker:
        marker.write(f"py {value}\n")
    return value


@app.task(name="interop.py_mul")
def mul(x, y):
    return x * y


@app.task(name="interop.py_tsum")
def tsum(values):
    return sum(values)


@app.task(name="interop.py_errback")
def errback(task_id):
    """A canvas errback, old style (one argument: the failed task's id), that leaves a trace the test reads.

    With more parameters Celery would call it inline as a new-style errback (request, exc, traceback)."""
    with open(os.environ["KQ_INTEROP_MARKER"], "a", encoding="utf-8") as marker:
        marker.write(f"py {task_id}\n")
    return task_id


@app.task(bind=True, name="interop.py_replace")
def replace_with_kq(self, x):
    """Replaces itself with a kq chain (Task.replace)."""
    kq = os.environ["KQ_INTEROP_KQ_QUEUE"]
    return self.replace(app.signature("interop.kq_add", args=(x, 1), queue=kq) | app.signature("interop.kq_mul", args=(2,), queue=kq))


@app.task(bind=True, name="interop.py_request_header")
def request_header(self, name):
    """What a custom message header reads as on the Python side: Celery sets each on the task's request (where
    opentelemetry-instrumentation-celery looks for `traceparent`)."""
    return getattr(self.request, name, None)
