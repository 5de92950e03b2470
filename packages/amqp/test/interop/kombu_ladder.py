"""Declares a native delayed delivery ladder the way Kombu 5.5+ does (the installed Kombu 5.2 has no such module):
28 topic exchanges and TTL queues, their level-to-level bindings and the delivery exchange.

Usage: kombu_ladder.py <amqp url> <name prefix> <classic|quorum>
"""
import sys

from kombu import Connection, Exchange, Queue

BITS = 28


def main():
    url, prefix, queue_type = sys.argv[1:4]
    name = lambda base: f"{prefix}_{base}" if prefix else base  # noqa: E731 - Kombu's prefix rule
    with Connection(url) as conn:
        channel = conn.channel()
        key = "1.#"
        for level in range(BITS - 1, -1, -1):
            current = name(f"celery_delayed_{level}")
            lower = name(f"celery_delayed_{level - 1}") if level > 0 else name("celery_delayed_delivery")
            Exchange(current, type="topic").bind(channel).declare()
            arguments = {
                "x-queue-type": queue_type,
                "x-overflow": "reject-publish",
                "x-message-ttl": 2 ** level * 1000,
                "x-dead-letter-exchange": lower,
            }
            if queue_type == "quorum":
                arguments["x-dead-letter-strategy"] = "at-least-once"
            queue = Queue(current, queue_arguments=arguments).bind(channel)
            queue.declare()
            queue.bind_to(current, key)
            key = "*." + key
        key = "0.#"
        for level in range(BITS - 1, 0, -1):
            Exchange(name(f"celery_delayed_{level - 1}"), type="topic").bind(channel).bind_to(name(f"celery_delayed_{level}"), key)
            key = "*." + key
        delivery = Exchange(name("celery_delayed_delivery"), type="topic").bind(channel)
        delivery.declare()
        delivery.bind_to(name("celery_delayed_0"), key)
    print("declared")


if __name__ == "__main__":
    main()
