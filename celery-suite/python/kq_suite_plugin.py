"""pytest plugin of kq's celery-suite harness (loaded with ``-p kq_suite_plugin``).

Celery's ``t/integration/conftest.py`` imports ``celery_session_worker`` from ``celery.contrib.pytest``, which starts
a Python worker inside pytest. The harness runs the worker itself (a kq worker, or a Python one for the baseline), so
this plugin swaps that fixture, before the conftest imports it, for one that starts no worker and checks that exactly
the expected nodes answer ``inspect ping`` (so no stray Python worker can run the tests in kq's place). It also writes
each test's outcome as a JSON line for the runner (``KQ_SUITE_REPORT``).

Isolation, so several runs go at once: each run has a private Redis server (``REDIS_PORT``), which 5.2.6's conftest
cannot be told (its ``get_redis_connection`` names only the host), and client settings of its own
(``KQ_SUITE_CELERY_CONFIG``, JSON: the RabbitMQ quorum / topic settings), which the conftest's ``celery_config`` cannot
be given either.
"""
import json
import os
import re
import time

import celery.contrib.pytest as celery_pytest
import pytest
from celery.utils.nodenames import anon_nodename
from kq_suite_settings import CONFIG_OVERRIDES, use_private_redis

# Which worker the runner started: 'kq' (the suite under test) or 'celery' (the Python baseline).
WORKER_SOFTWARE = os.environ.get('KQ_SUITE_WORKER', '')
REPORT_PATH = os.environ.get('KQ_SUITE_REPORT')
STARTUP_TIMEOUT = float(os.environ.get('KQ_SUITE_STARTUP_TIMEOUT', '60'))

# pip's celery registers this plugin through an entry point; Debian's package has none, and upstream's fixtures
# (celery_session_app, ...) live there.
pytest_plugins = ['celery.contrib.pytest']


@pytest.fixture(scope='session')
def celery_session_worker(celery_session_app):
    """Starts no worker: waits for the runner's worker and checks that it, and only it, answers ``inspect ping``.

    Upstream's in-process worker is named ``anon_nodename()`` (``gen<pytest's pid>@<host>``) and test_inspect.py
    expects that name, so the runner starts its worker under that name once it knows pytest's pid.
    """
    if WORKER_SOFTWARE not in ('kq', 'celery'):
        raise RuntimeError('KQ_SUITE_WORKER is not set: run the suite with `pnpm test:celery-suite`.')
    expected = {anon_nodename()}
    inspect = celery_session_app.control.inspect(timeout=1.0)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    answering = set()
    while time.monotonic() < deadline:
        answering = set(inspect.ping() or {})
        if expected <= answering:
            break
    # A wrong worker voids the whole run (its outcomes would be read as the worker's): stop pytest, exit code 3.
    if answering != expected:
        pytest.exit(
            f'inspect ping was answered by {sorted(answering)}, expected exactly {sorted(expected)}: the worker did '
            'not start, or another worker consumes this broker (stop it, or use another Redis database / vhost).',
            returncode=3,
        )
    report = (inspect.report() or {}).get(anon_nodename(), {}).get('ok', '')
    software = re.search(r'software -> (\w+):', report)
    if software is None or software.group(1) != WORKER_SOFTWARE:
        pytest.exit(f'{anon_nodename()} is not a {WORKER_SOFTWARE} worker: inspect report says {report[:200]!r}', returncode=3)
    yield None


# The conftest does `from celery.contrib.pytest import celery_session_worker`: it must find this fixture instead.
celery_pytest.celery_session_worker = celery_session_worker

# Every app the pytest plugin makes (the session's and each test's) gets the run's settings over the conftest's.
_create_app = celery_pytest._create_app


def _create_app_with_overrides(**kwargs):
    return _create_app(**{**kwargs, **CONFIG_OVERRIDES})


celery_pytest._create_app = _create_app_with_overrides


def pytest_plugin_registered(plugin, manager):
    # The conftest is registered before any test module imports `get_redis_connection` from it.
    if getattr(plugin, '__name__', '') == 't.integration.conftest':
        use_private_redis(plugin)


def pytest_runtest_logreport(report):
    if not REPORT_PATH:
        return
    # One line per test: its failing phase if any, else its call phase (or setup's, when it was skipped there).
    if report.when == 'call' or report.outcome != 'passed' or (report.when == 'setup' and report.skipped):
        if report.when == 'teardown' and report.outcome == 'passed':
            return
        message = ''
        if report.outcome != 'passed':
            crash = getattr(report.longrepr, 'reprcrash', None)
            if crash is not None:
                message = crash.message
            elif isinstance(report.longrepr, tuple):
                message = str(report.longrepr[2])
            else:
                message = str(report.longrepr or '')
        xfail = getattr(report, 'wasxfail', None)
        if xfail is not None:
            # Upstream marks it xfail: failing is expected (pytest says skipped), passing is an xpass.
            state = 'xpassed' if report.outcome == 'passed' else 'xfailed'
            message = f'{state} (upstream xfail: {xfail}){": " + message.splitlines()[0] if message else ""}' 
        with open(REPORT_PATH, 'a', encoding='utf-8') as sink:
            sink.write(json.dumps({
                'nodeid': report.nodeid,
                'when': report.when,
                'outcome': report.outcome,
                'message': message.splitlines()[0][:300] if message else '',
            }) + '\n')
