import type { Command } from 'commander';

/** The options every command takes, before or after its name (`kq -A proj worker`, as `celery -A proj worker`). */
export interface GlobalOptions {
  app?: string;
  broker?: string;
  resultBackend?: string;
}

export const GLOBAL_OPTION_HELP = {
  app: 'the module that exports your App (its `app` or default export); .ts loads through tsx',
  broker: 'broker URL (redis://, amqp://, postgresql://, memory://); default: KQ_BROKER_URL, CELERY_BROKER_URL or the app',
  resultBackend: 'result backend URL; default: KQ_RESULT_BACKEND, CELERY_RESULT_BACKEND or the app',
} as const;

/** The global options as seen from a (sub)command, wherever on the line they were given. */
export function globalOptions(command: Command): GlobalOptions {
  const all = command.optsWithGlobals<GlobalOptions>();
  return {
    ...(all.app === undefined ? {} : { app: all.app }),
    ...(all.broker === undefined ? {} : { broker: all.broker }),
    ...(all.resultBackend === undefined ? {} : { resultBackend: all.resultBackend }),
  };
}
