"""A Python Kombu/Celery peer for kq's AMQP interop tests (Debian python3-kombu 5.2.4, python3-amqp, python3-celery).

Usage (every command prints one JSON document on stdout):
  kombu_peer.py publish URL QUEUE          publish the reference message (all header types) to QUEUE
  kombu_peer.py consume URL QUEUE TIMEOUT  take one message from QUEUE and describe it with Python types
  kombu_peer.py declare-celery URL PREFIX [OID EVENT_QUEUE RPC_QUEUE]
                                           declare Celery's shared entities exactly as Celery 5.2 does,
                                           renamed with PREFIX (task queue, pidbox, reply, events, rpc);
                                           the per-process names can be given to declare the same ones again
"""
import base64
import datetime
import json
import sys
import time
from decimal import Decimal

from kombu import Connection, Exchange, Producer, Queue


def reference_headers():
    return {
        'int': 42,
        'neg': -7,
        'zero': 0,
        'big': 2 ** 40,
        'negbig': -(2 ** 40),
        'float': 0.25,
        'yes': True,
        'no': False,
        'nil': None,
        'text': 'h\u00e9llo',
        'list': [1, 'two', None, [3, 4.5]],
        'map': {'a': {'b': 1, 'c': [True]}},
        'timelimit': [None, None],
        'when': datetime.datetime(2026, 1, 2, 3, 4, 5),
        'price': Decimal('-1.25'),
    }


def typed(value):
    """A JSON description of a Python value that keeps its type."""
    if isinstance(value, bool):
        return {'t': 'bool', 'v': value}
    if isinstance(value, int):
        return {'t': 'int', 'v': value}
    if isinstance(value, float):
        return {'t': 'float', 'v': value}
    if value is None:
        return {'t': 'None', 'v': None}
    if isinstance(value, str):
        return {'t': 'str', 'v': value}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {'t': 'bytes', 'v': base64.b64encode(bytes(value)).decode()}
    if isinstance(value, datetime.datetime):
        return {'t': 'datetime', 'v': value.isoformat()}
    if isinstance(value, Decimal):
        return {'t': 'Decimal', 'v': str(value)}
    if isinstance(value, (list, tuple)):
        return {'t': 'list', 'v': [typed(item) for item in value]}
    if isinstance(value, dict):
        return {'t': 'dict', 'v': {key: typed(item) for key, item in value.items()}}
    return {'t': type(value).__name__, 'v': repr(value)}


def publish(url, queue_name):
    with Connection(url) as conn:
        producer = Producer(conn.default_channel)
        producer.publish(
            b'{"from": "python"}',
            exchange='',
            routing_key=queue_name,
            content_type='application/json',
            content_encoding='utf-8',
            headers=reference_headers(),
            delivery_mode=2,
            priority=5,
            correlation_id='corr-py',
            reply_to='reply-py',
            expiration=60,  # seconds; Kombu sends the property as milliseconds, '60000'
            message_id='mid-py',
            timestamp=1700000000,
            type='kind-py',
            user_id='guest',
            app_id='kombu-peer',
        )
    return {'published': True}


def consume(url, queue_name, timeout):
    with Connection(url) as conn:
        channel = conn.default_channel
        deadline = datetime.datetime.now() + datetime.timedelta(seconds=float(timeout))
        while datetime.datetime.now() < deadline:
            message = channel.basic_get(queue_name, no_ack=False)
            if message is not None:
                channel.basic_ack(message.delivery_tag)
                props = dict(message.properties)
                headers = props.pop('application_headers', {}) or {}
                body = message.body.encode('utf-8') if isinstance(message.body, str) else bytes(message.body)
                return {
                    'body': base64.b64encode(body).decode(),
                    'headers': {key: typed(value) for key, value in headers.items()},
                    'properties': {key: typed(value) for key, value in props.items()},
                    'delivery_info': {key: typed(value) for key, value in message.delivery_info.items() if key != 'channel'},
                }
            time.sleep(0.05)
    return {'timeout': True}


def declare_celery(url, prefix, oid=None, event_queue=None, rpc_queue=None):
    from copy import copy

    from celery import Celery
    from celery.events.event import get_exchange

    app = Celery('kqinterop', broker=url, backend='rpc://')
    app.conf.update(
        task_default_queue=f'{prefix}celery',
        control_exchange=f'{prefix}celery',
        event_exchange=f'{prefix}celeryev',
        event_queue_prefix=f'{prefix}celeryev',
    )
    declared = {'queues': [], 'exchanges': []}
    with app.connection_for_write() as conn:
        channel = conn.default_channel

        def queue(entity):
            bound = entity(channel)
            bound.declare()
            declared['queues'].append(bound.name)
            if bound.exchange is not None and bound.exchange.name:
                declared['exchanges'].append(bound.exchange.name)

        def exchange(entity):
            entity(channel).declare()
            declared['exchanges'].append(entity.name)

        # The task queue and its exchange (direct, durable), as a worker declares them.
        queue(app.amqp.queues[app.conf.task_default_queue])
        # Remote control: the fanout request exchange, a worker's node queue, the reply exchange and a client reply queue.
        mailbox = app.control.mailbox
        if oid:
            # `oid` is a plain property (derived from the process and object ids): fix it for this run.
            type(mailbox).oid = property(lambda _self: oid)
        exchange(mailbox.exchange)
        exchange(mailbox.reply_exchange)
        queue(mailbox.get_queue('w1@kqinterop'))
        queue(mailbox.get_reply_queue())
        declared['reply_oid'] = mailbox.oid
        # Events: the topic exchange and a monitor's receiver queue.
        exchange(get_exchange(conn, name=app.conf.event_exchange))
        receiver = app.events.Receiver(conn, handlers={}, queue_prefix=app.conf.event_queue_prefix)
        event = copy(receiver.queue)
        if event_queue:
            event.name = event_queue
        queue(event)
        declared['event_queue'] = event.name
        # The rpc:// result queue of a client.
        rpc = copy(app.backend.binding)
        if rpc_queue:
            rpc.name = rpc.routing_key = rpc_queue
        queue(rpc)
        declared['rpc_queue'] = rpc.name
    declared['exchanges'] = sorted(set(declared['exchanges']))
    return declared


def main():
    command, url = sys.argv[1], sys.argv[2]
    if command == 'publish':
        result = publish(url, sys.argv[3])
    elif command == 'consume':
        result = consume(url, sys.argv[3], sys.argv[4])
    elif command == 'declare-celery':
        result = declare_celery(url, *sys.argv[3:])
    else:
        raise SystemExit(f'unknown command {command}')
    json.dump(result, sys.stdout)


if __name__ == '__main__':
    main()
