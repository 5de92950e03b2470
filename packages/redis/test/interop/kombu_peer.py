"""Real Python Kombu on the other side of kq's Redis transport (interop.test.ts runs this with /usr/bin/python3).

Reads one JSON spec on stdin and writes JSON lines on stdout:
  {"cmd": "publish", ...}  publishes messages with kombu's Producer, prints {"published": n}
  {"cmd": "consume", ...}  consumes `count` messages (acking each, or with "abandon" exits holding them unacked),
                           prints "ready" once consuming, then one line per message
  {"cmd": "sweep", ...}    runs kombu's visibility sweep (QoS.restore_visible) once
Queues/exchanges are declared as given: {"name", "exchange", "type", "routing_key"}.
"""
import base64
import json
import os
import socket
import sys
import time

from kombu import Connection, Consumer, Exchange, Producer, Queue


def make_queue(spec):
    if spec.get("exchange"):
        exchange = Exchange(spec["exchange"], type=spec.get("type", "direct"))
        return Queue(spec["name"], exchange, routing_key=spec.get("routing_key", ""))
    return Queue(spec["name"], Exchange(""), routing_key=spec["name"])


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def publish(conn, spec):
    channel = conn.channel()
    for qspec in spec.get("declare", []):
        make_queue(qspec)(channel).declare()
    exchange = Exchange(spec.get("exchange", ""), type=spec.get("type", "direct"))
    producer = Producer(channel, exchange=exchange)
    for m in spec["messages"]:
        producer.publish(
            m["body"].encode("utf-8"),
            routing_key=m.get("routing_key", ""),
            content_type=m.get("content_type", "application/json"),
            content_encoding=m.get("content_encoding", "utf-8"),
            headers=m.get("headers", {}),
            declare=[exchange] if exchange.name else [],
            **m.get("properties", {}),
        )
    emit({"published": len(spec["messages"])})


def consume(conn, spec):
    channel = conn.channel()
    queues = [make_queue(q) for q in spec["queues"]]
    got = []

    def on_message(body, message):
        got.append(message)
        emit({
            "body_b64": base64.b64encode(message.body if isinstance(message.body, bytes) else message.body.encode("utf-8")).decode(),
            "content_type": message.content_type,
            "content_encoding": message.content_encoding,
            "headers": message.headers,
            "properties": {k: v for k, v in message.properties.items() if k != "delivery_info"},
            "delivery_info": {k: message.delivery_info.get(k) for k in ("exchange", "routing_key", "redelivered")},
            "priority": message.properties.get("priority"),
        })
        if not spec.get("no_ack") and not spec.get("abandon"):
            message.ack()

    consumer = Consumer(channel, queues, callbacks=[on_message], no_ack=spec.get("no_ack", False), accept=None)
    consumer.qos(prefetch_count=spec.get("prefetch", 1))
    consumer.consume()
    # One short poll so the BRPOP/PSUBSCRIBE is issued before we say we are ready.
    try:
        conn.drain_events(timeout=0.05)
    except socket.timeout:
        pass
    emit("ready")
    deadline = time.time() + spec.get("timeout", 10)
    while len(got) < spec["count"] and time.time() < deadline:
        try:
            conn.drain_events(timeout=0.2)
        except socket.timeout:
            pass
    emit({"done": len(got)})
    if spec.get("abandon"):
        # A crash: exit holding the unacked messages, without kombu's restore-on-close.
        os._exit(0)


def sweep(conn, spec):
    channel = conn.default_channel
    channel.qos.restore_visible(num=spec.get("num", 100))
    emit({"swept": True})


def main():
    spec = json.loads(sys.stdin.read())
    with Connection(spec["url"], transport_options=spec.get("transport_options", {})) as conn:
        {"publish": publish, "consume": consume, "sweep": sweep}[spec["cmd"]](conn, spec)


if __name__ == "__main__":
    main()
