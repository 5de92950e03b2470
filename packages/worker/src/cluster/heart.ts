import type { WorkerStep } from '../runtime/bootstep';
import type { WorkerHost } from '../runtime/worker-host';
import { SOFTWARE_INFO, loadAverage } from '../protocol/software-info';
import { AlignedTicker } from './aligned-ticker';
import type { ClusterContext } from './cluster-context';
import { DEFAULT_HEARTBEAT_INTERVAL } from './heartbeat-interval';

/**
 * Celery's `Heart`: `worker-online` once the worker is ready, `worker-heartbeat` every interval (2 s), and
 * `worker-offline` on stop — each with `freq, active, processed, loadavg` and the software info. Monitors and
 * other workers' Gossip decide who is alive from these (`now < last heartbeat + 2 × freq`). Heartbeats go out on
 * the wall clock's multiples of the interval (`AlignedTicker`), so a fleet's reach the broker together.
 */
export class HeartStep implements WorkerStep {
  readonly name = 'Heart';
  readonly #context: ClusterContext;
  #ticker: AlignedTicker | undefined;
  #online = false;
  #onReady: (() => void) | undefined;

  constructor(context: ClusterContext) {
    this.#context = context;
  }

  get interval(): number {
    return this.#context.options.heartbeatInterval ?? DEFAULT_HEARTBEAT_INTERVAL;
  }

  async start(worker: WorkerHost): Promise<void> {
    if (!this.#context.owns(worker) || this.#context.options.heartbeat === false) return;
    // Online only once the worker consumes and answers remote control, so whoever reacts to it finds it listening.
    this.#onReady = () => {
      this.#onReady = undefined;
      this.#send(worker, 'worker-online');
      this.#online = true;
      // At least a millisecond, as setInterval made it: an interval of 0 beats as often as the timers allow.
      this.#ticker = new AlignedTicker(Math.max(1, this.interval * 1000), () => this.#send(worker, 'worker-heartbeat'));
      this.#ticker.start();
    };
    worker.once('ready', this.#onReady);
  }

  async stop(worker: WorkerHost): Promise<void> {
    if (this.#onReady) worker.off('ready', this.#onReady);
    this.#onReady = undefined;
    this.#ticker?.stop();
    this.#ticker = undefined;
    if (this.#online) {
      this.#online = false;
      this.#send(worker, 'worker-offline');
      await this.#context.dispatcher?.flush(2000);
    }
  }

  #send(worker: WorkerHost, type: string): void {
    this.#context.dispatcher?.send(type, {
      freq: this.interval,
      active: worker.state.active.size,
      processed: worker.state.processed,
      loadavg: loadAverage(),
      ...SOFTWARE_INFO,
    });
  }
}
