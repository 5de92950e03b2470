import { Mailbox, type BroadcastOptions, type Connection, type MailboxReply } from '@kq/core';
import type { AppConfig } from '../config/config';

export interface RevokeOptions {
  /** Also abort the task if it is running (its `signal` is aborted). */
  terminate?: boolean;
  /** Celery's signal name, kept for wire compatibility (`SIGTERM` by default). */
  signal?: string;
  /** Wait for replies (default false, as `app.control.revoke`). */
  reply?: boolean;
  timeout?: number;
  destination?: readonly string[];
}

/** What remote control needs of the app: its broker connection and the mailbox settings. */
export interface ControlApp {
  readonly connection: Connection;
  readonly conf: Pick<AppConfig, 'controlExchange' | 'taskSerializer' | 'acceptContent'>;
}

/** Remote control of workers over the pidbox mailbox (Celery's `app.control`): kq and Python workers alike. */
export class Control {
  readonly #app: ControlApp;
  #mailbox: Mailbox | undefined;

  constructor(app: ControlApp) {
    this.#app = app;
  }

  get mailbox(): Mailbox {
    this.#mailbox ??= new Mailbox(this.#app.connection, {
      namespace: this.#app.conf.controlExchange,
      serializer: this.#app.conf.taskSerializer,
      accept: this.#app.conf.acceptContent,
    });
    return this.#mailbox;
  }

  /** Revokes tasks on every worker: they are skipped when received, and aborted with `terminate`. */
  async revoke(taskId: string | readonly string[], options: RevokeOptions = {}): Promise<MailboxReply[]> {
    return this.broadcast('revoke', {
      arguments: { task_id: taskId, terminate: options.terminate ?? false, signal: options.signal ?? 'SIGTERM' },
      reply: options.reply ?? false,
      ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
      ...(options.destination ? { destination: options.destination } : {}),
    });
  }

  /** `ping` every worker; resolves to their replies. */
  ping(options: Omit<BroadcastOptions, 'reply'> = {}): Promise<MailboxReply[]> {
    return this.broadcast('ping', { ...options, reply: true });
  }

  /** Sends any remote-control command (Celery's `broadcast`). */
  broadcast(command: string, options: BroadcastOptions = {}): Promise<MailboxReply[]> {
    return this.mailbox.broadcast(command, options);
  }

  async close(): Promise<void> {
    await this.#mailbox?.close();
    this.#mailbox = undefined;
  }
}
