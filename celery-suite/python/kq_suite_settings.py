"""What the harness tells both the pytest client and the baseline's Python worker about the run's isolation.

- ``KQ_SUITE_CELERY_CONFIG``: JSON settings laid over the conftest's (the baseline worker takes them too), e.g. the
  quorum queues, topic exchange and publisher confirms that turn on RabbitMQ's native delayed delivery (5.5+).
- ``REDIS_PORT``: the run's private Redis server. 5.5+'s ``get_redis_connection`` reads it; 5.2.6's lives in the
  conftest and names only ``REDIS_HOST``, so ``use_private_redis`` points it at the port too.
"""
import json
import os

CONFIG_OVERRIDES = json.loads(os.environ.get('KQ_SUITE_CELERY_CONFIG') or '{}')


def redis_connection():
    """5.5+'s ``get_redis_connection``: the Redis of ``REDIS_HOST`` and ``REDIS_PORT``, database 0."""
    from redis import StrictRedis

    return StrictRedis(host=os.environ.get('REDIS_HOST', 'localhost'), port=int(os.environ.get('REDIS_PORT', '6379')))


def use_private_redis(conftest):
    """Points a 5.2.6 conftest's own ``get_redis_connection`` (host only) at the run's Redis port."""
    if 'get_redis_connection' in vars(conftest) and getattr(conftest.get_redis_connection, '__module__', '') == conftest.__name__:
        conftest.get_redis_connection = redis_connection
