/** A broker instance of the suite's own, on its own port and data directory: never the shared one. */
export interface BrokerNode {
  readonly kind: 'redis' | 'amqp' | 'postgres' | 'sentinel' | 'rabbit-cluster' | 'redis-cluster';
  /** The URL workers and producers use. */
  readonly url: string;
  /** Transport options workers and producers need besides the URL (Sentinel: the master's name). */
  readonly transportOptions?: Record<string, unknown>;
  /** Arguments the task queue is declared with (a cluster: a quorum queue). */
  readonly queueArguments?: Record<string, unknown>;
  /** Moves the queue's keys to another node while it is in use (Redis Cluster: its slot migrates); where it can. */
  reshard?(queue: string): Promise<string>;
  /** Replaces the primary with a standby (Sentinel: the master dies, a replica is promoted); where there is one. */
  failover?(): Promise<void>;
  start(): Promise<void>;
  /** Kills the server outright (SIGKILL): its persisted data survives for the next start. */
  kill(): Promise<void>;
  /** Stops the process being scheduled (SIGSTOP): connections stay open, nothing answers — a network stall. */
  pause(): void;
  resume(): void;
  /** Drops every client connection from the server side. */
  killConnections(): Promise<number>;
  /** Stops the server and removes its data. */
  destroy(): Promise<void>;
}

export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
