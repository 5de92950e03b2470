import { hostname } from 'node:os';

let cached: string | undefined;

/**
 * The node name of a process that is not a worker, as Celery's `anon_nodename()` writes it into a task's `origin`
 * header: `gen<pid>@<hostname>` (Python's `socket.gethostname()` is the same call as `os.hostname()`). Computed
 * once: it is written into every message sent, and `os.hostname()` is a system call.
 */
export function anonNodename(): string {
  return (cached ??= `gen${process.pid}@${hostname()}`);
}

/** A node name's `%h` (host name), `%n` (its first label) and `%d` (its domain), as Celery's `host_format` expands them. */
export function expandHostname(name: string): string {
  const host = hostname();
  return name.replace(/%h/g, host).replace(/%n/g, host.split('.')[0] ?? host).replace(/%d/g, host.split('.').slice(1).join('.'));
}

