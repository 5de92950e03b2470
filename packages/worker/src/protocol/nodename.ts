import { hostname } from 'node:os';

/**
 * The node name of a process that is not a worker, as Celery's `anon_nodename()` writes it into a task's `origin`
 * header: `gen<pid>@<hostname>` (Python's `socket.gethostname()` is the same call as `os.hostname()`).
 */
export function anonNodename(): string {
  return `gen${process.pid}@${hostname()}`;
}
