import { parseArgs } from 'node:util';
import { KqError, sanitizeUrl } from '@kq/core';
import type { App } from '../app';
import { ClusterState } from '../events/cluster-state';
import { renderClusterView } from '../events/cluster-view';
import { EventDumper } from '../events/event-dump';
import { EventReceiver } from '../events/event-receiver';
import { loadApp } from './load-app';

export interface EventsMonitorOptions {
  app: App;
  /** Print one line per event (`--dump`) instead of the live view. */
  dump?: boolean;
  /** Where to write (default stdout). */
  out?: NodeJS.WritableStream & { isTTY?: boolean; columns?: number; rows?: number };
  /** Redraw in place (default: when `out` is a terminal). Otherwise a plain snapshot is printed when things change. */
  interactive?: boolean;
  /** Seconds between redraws (Celery's `--frequency`, 1). */
  frequency?: number;
  /** Ask workers for a heartbeat at start so they show up at once (default true). */
  wakeup?: boolean;
}

export interface EventsMonitor {
  readonly state: ClusterState;
  readonly receiver: EventReceiver;
  /** Stops receiving and restores the terminal. */
  stop(): Promise<void>;
}

const HIDE_CURSOR = '\x1b[?25l';
const SHOW_CURSOR = '\x1b[?25h';
const HOME_AND_CLEAR = '\x1b[H\x1b[2J';

/**
 * What `kq events` runs: an event receiver bound to every event (`#`) feeding a `ClusterState`, shown either as a
 * live screen of workers and tasks (like `celery events`) or, with `dump`, as Celery's `--dump` lines. Without a
 * terminal the screen is printed as plain snapshots, so it can be piped or logged.
 */
export async function startEventsMonitor(options: EventsMonitorOptions): Promise<EventsMonitor> {
  const { app } = options;
  const out = options.out ?? process.stdout;
  const state = new ClusterState();
  const dumper = new EventDumper();
  const write = (text: string): void => {
    try {
      out.write(text);
    } catch {
      // a closed pipe must not crash the monitor
    }
  };
  const receiver = new EventReceiver(app.connection, {
    clock: app.clock,
    exchange: app.conf.eventExchange,
    accept: app.conf.acceptContent,
    wakeup: options.wakeup ?? true,
    mailbox: app.control.mailbox,
    handlers: {
      '*': (event) => {
        state.event(event);
        if (options.dump) write(`${dumper.format(event)}\n`);
      },
    },
  });
  receiver.on('error', (error) => {
    if (options.dump) write(`-> ${error.message}\n`);
  });
  if (options.dump) write('-> evdump: starting capture...\n');
  await receiver.start();

  let timer: NodeJS.Timeout | undefined;
  const interactive = !options.dump && (options.interactive ?? out.isTTY === true);
  if (!options.dump) {
    let drawnAt = -1;
    const title = `kq events — ${sanitizeUrl(app.conf.broker)}`;
    const draw = (): void => {
      const lines = renderClusterView(state, {
        title,
        ...(interactive && out.columns ? { width: out.columns } : {}),
        ...(interactive && out.rows ? { height: out.rows } : {}),
      });
      if (interactive) write(`${HOME_AND_CLEAR}${lines.join('\n')}\n`);
      else if (state.eventCount !== drawnAt) write(`${lines.join('\n')}\n\n`);
      drawnAt = state.eventCount;
    };
    if (interactive) write(HIDE_CURSOR);
    draw();
    timer = setInterval(draw, (options.frequency ?? 1) * 1000);
  }

  let stopped = false;
  return {
    state,
    receiver,
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      if (timer) clearInterval(timer);
      if (interactive) write(`${SHOW_CURSOR}\n`);
      await receiver.close();
    },
  };
}

/** `kq events [-A module] [-b url] [--dump] [-F seconds]`: runs until interrupted. */
export async function eventsCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      app: { type: 'string', short: 'A' },
      broker: { type: 'string', short: 'b' },
      dump: { type: 'boolean', short: 'd' },
      frequency: { type: 'string', short: 'F' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log('Usage: kq events [-A module] [-b url] [--dump] [-F seconds]\n\nA live view of the workers and tasks (like `celery events`); --dump prints one line per event.');
    return 0;
  }
  const frequency = values.frequency === undefined ? 1 : Number(values.frequency);
  if (!Number.isFinite(frequency) || frequency <= 0) throw new KqError(`-F/--frequency must be a positive number of seconds, got ${JSON.stringify(values.frequency)}.`);
  const app = await loadApp({ app: values.app, broker: values.broker });
  const monitor = await startEventsMonitor({ app, dump: values.dump ?? false, frequency });
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
    process.stdout.once('error', () => resolve()); // the reader went away (`kq events --dump | head`)
  });
  await monitor.stop();
  await app.close();
  return 0;
}
