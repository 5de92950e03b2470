"""Sends shop.checkout with Python Celery, carrying a W3C traceparent header as opentelemetry-instrumentation-celery
puts it in a task message. argv: broker, queue, traceparent."""
import sys

from celery import Celery

broker, queue, traceparent = sys.argv[1:4]
app = Celery("shop", broker=broker)
result = app.send_task("shop.checkout", args=["order-py"], queue=queue, headers={"traceparent": traceparent})
print(result.id)
