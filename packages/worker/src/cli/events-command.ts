import { sanitizeUrl } from '@kq/core';
import type { Command } from 'commander';
import type { App } from '../app/app';
import { ClusterState } from '../events/cluster-state';
import { renderClusterView, renderTaskDetail } from '../events/cluster-view';
import { EventDumper } from '../events/event-dump';
import { EventReceiver } from '../events/event-receiver';
import { EventsNavigator, type KeyPress } from './events-navigator';
import { globalOptions } from './global-options';
import { loadApp } from './load-app';
import { positiveSeconds } from './option-parsers';
import { stopSignalReceived } from '../platform/stop-signals';

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
  /** Keys for the interactive screen (default stdin, when it is a terminal): select a task, open its page. */
  input?: NodeJS.ReadStream;
  /** Called when the person quits from the keyboard (q, Ctrl+C in raw mode). */
  onQuit?: () => void;
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
  const { emitKeypressEvents } = await import('node:readline'); // loaded by the monitor, not by every `kq` command
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
  const input = options.input ?? process.stdin;
  const keyboard = interactive && input.isTTY === true ? new EventsNavigator() : undefined;
  let rows: readonly string[] = [];
  let onKey: ((text: string, press: KeyPress) => void) | undefined;
  if (!options.dump) {
    let drawnAt = -1;
    const title = `kq events — ${sanitizeUrl(app.conf.broker)}`;
    const draw = (): void => {
      const size = {
        ...(interactive && out.columns ? { width: out.columns } : {}),
        ...(interactive && out.rows ? { height: out.rows } : {}),
      };
      const page = keyboard?.mode === 'detail' && keyboard.selected !== undefined ? state.tasks.get(keyboard.selected) : undefined;
      const lines = page
        ? renderTaskDetail(page, { ...size, keys: EventsNavigator.DETAIL_KEYS })
        : renderClusterView(state, {
            title,
            ...size,
            ...(keyboard ? { keys: EventsNavigator.LIST_KEYS, selected: keyboard.selected ?? '', onTasks: (tasks) => (rows = tasks.map((task) => task.uuid)) } : {}),
          });
      if (interactive) write(`${HOME_AND_CLEAR}${lines.join('\n')}\n`);
      else if (state.eventCount !== drawnAt) write(`${lines.join('\n')}\n\n`);
      drawnAt = state.eventCount;
    };
    if (interactive) write(HIDE_CURSOR);
    draw();
    timer = setInterval(draw, (options.frequency ?? 1) * 1000);
    if (keyboard) {
      emitKeypressEvents(input);
      input.setRawMode(true);
      input.resume();
      onKey = (_text, press) => {
        const action = keyboard.key(press, rows);
        if (action === 'redraw') draw();
        else if (action === 'quit') options.onQuit?.();
      };
      input.on('keypress', onKey);
    }
  }

  let stopped = false;
  return {
    state,
    receiver,
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      if (timer) clearInterval(timer);
      if (onKey) {
        input.off('keypress', onKey);
        input.setRawMode(false);
        input.pause();
      }
      if (interactive) write(`${SHOW_CURSOR}\n`);
      await receiver.close();
    },
  };
}

interface EventsFlags {
  dump?: boolean;
  frequency: number;
}

/** `kq events [--dump] [-F seconds]`: runs until interrupted. */
export function registerEventsCommand(program: Command): void {
  program
    .command('events')
    .description('A live view of the workers and tasks (like `celery events`): select a task with the arrow keys and Enter to see its page; --dump prints one line per event.')
    .option('-d, --dump', 'print one line per event, as `celery events --dump`')
    .option('-F, --frequency <seconds>', 'seconds between redraws', positiveSeconds, 1)
    .action(async (flags: EventsFlags, command: Command) => {
      const app = await loadApp(globalOptions(command));
      let quit: () => void = () => undefined;
      const quitting = new Promise<void>((resolve) => (quit = resolve));
      const monitor = await startEventsMonitor({ app, dump: flags.dump ?? false, frequency: flags.frequency, onQuit: () => quit() });
      await new Promise<void>((resolve) => {
        void quitting.then(resolve);
        void stopSignalReceived().then(resolve);
        process.stdout.once('error', () => resolve()); // the reader went away (`kq events --dump | head`)
      });
      await monitor.stop();
      await app.close();
    });
}
