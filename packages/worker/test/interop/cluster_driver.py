"""Drives Python Celery's own client API for the kq interop tests, one JSON command per stdin line.

Importing Celery takes about a second, so the tests keep one driver process per file and send it commands:

  {"op": "inspect", "method": "stats", "destination": ["kq@x"], "arguments": {}, "timeout": 2}
      -> app.control.inspect(...)._request(method, **arguments)   (what `celery inspect <method>` runs)
  {"op": "broadcast", "method": "rate_limit", "arguments": {...}, "destination": [...], "timeout": 2}
      -> app.control.broadcast(method, arguments, reply=True, ...)  (what `celery control <method>` runs)
  {"op": "revoke", "task_id": "id" | ["ids"], "destination": [...], "terminate": false}
      -> app.control.revoke(...)                                     (a cast, no reply)
  {"op": "send_task", "name": "interop.add", "args": [1, 2], "queue": "q", "task_id": "..."}

Each command answers one JSON line: {"ok": <result>} or {"error": "<repr>", "traceback": "..."}.
"""
import json
import sys
import traceback

from cluster_app import app


def run(command):
    op = command['op']
    timeout = command.get('timeout', 2.0)
    destination = command.get('destination')
    if op == 'inspect':
        inspect = app.control.inspect(destination=destination, timeout=timeout)
        return inspect._request(command['method'], **command.get('arguments', {}))
    if op == 'broadcast':
        return app.control.broadcast(command['method'], arguments=command.get('arguments', {}),
                                     destination=destination, reply=True, timeout=timeout,
                                     limit=len(destination) if destination else None)
    if op == 'revoke':
        app.control.revoke(command['task_id'], destination=destination, terminate=command.get('terminate', False))
        return None
    if op == 'send_task':
        result = app.send_task(command['name'], args=command.get('args', []), kwargs=command.get('kwargs', {}),
                               queue=command.get('queue'), task_id=command.get('task_id'))
        return result.id
    raise ValueError(f'unknown op {op!r}')


def finite(value):
    """JSON for JavaScript: Python writes Infinity/NaN literals that JSON.parse refuses; they become strings."""
    if isinstance(value, float) and (value != value or value in (float('inf'), float('-inf'))):
        return repr(value)
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def main():
    print(json.dumps({'ready': True}), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            reply = {'ok': finite(run(json.loads(line)))}
        except Exception as exc:  # report, keep serving
            reply = {'error': repr(exc), 'traceback': traceback.format_exc()}
        print(json.dumps(reply, default=repr), flush=True)


if __name__ == '__main__':
    main()
