"""The baseline's Python worker app: Celery's own ``t.integration.tasks``, configured as the suite's client is.

Started by the runner as ``python3 -m celery -A python_worker_app worker -P prefork -c 1``, with upstream's
``t/integration`` folder (read from ../shared, never copied) on PYTHONPATH: upstream's pytest worker, outside pytest.
"""
import os

from celery import Celery

from kq_suite_settings import CONFIG_OVERRIDES, use_private_redis

app = Celery(
    'celery_suite_baseline',
    broker=os.environ['TEST_BROKER'],
    backend=os.environ['TEST_BACKEND'],
    include=['t.integration.tasks'],
)
app.conf.update(
    # As the version's conftest configures its client (5.5+ sets result_extended).
    result_extended=os.environ.get('KQ_SUITE_RESULT_EXTENDED') == '1',
    worker_hijack_root_logger=False,
    **CONFIG_OVERRIDES,
)
app.set_default()

import t.integration.conftest as integration_conftest  # noqa: E402  (5.2.6's tasks import its get_redis_connection)

use_private_redis(integration_conftest)

import t.integration.tasks as integration_tasks  # noqa: E402  (after the app: shared_task binds to it)

app.register_task(integration_tasks.ClassBasedAutoRetryTask())
