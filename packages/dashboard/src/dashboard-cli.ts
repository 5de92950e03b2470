import { KqError } from '@kq/core';
import { App, loadAppModule, stopSignalReceived } from '@kq/worker';
import { Command, InvalidArgumentError, Option } from 'commander';
import { readAuthCredentials } from './auth-credentials';
import { Dashboard } from './dashboard';

interface DashboardFlags {
  app?: string;
  broker?: string;
  resultBackend?: string;
  port: number;
  address: string;
  basicAuth?: string;
  authFile?: string;
  trustProxy?: boolean;
  maxTasks?: number;
  deadLetterQueue?: string[];
  urlPrefix?: string;
  stateFile?: string;
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError('expected a port number (0 to 65535).');
  return n;
}

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive whole number.');
  return n;
}

/** Why `--basic-auth` is refused, and what to do instead. */
const BASIC_AUTH_REFUSED =
  'kq dashboard: --basic-auth would put passwords on the command line, which ps shows to every user of this machine: ' +
  'write user:password lines in a file only you can read and pass --auth-file <file>, or set KQ_DASHBOARD_AUTH=user:password[,user:password…].';

/**
 * `kq dashboard` / `kq-dashboard`: Flower's flags (`--port 5555`, `--address`, `--url-prefix`), the broker from `-b`,
 * KQ_BROKER_URL/CELERY_BROKER_URL or the app module (`-A`); basic-auth credentials from `--auth-file` or
 * KQ_DASHBOARD_AUTH (Flower's FLOWER_BASIC_AUTH too), never from the command line. Runs until SIGINT/SIGTERM;
 * resolves to the exit code (2 for a usage error, 1 for a failure, with one line saying why).
 */
export async function runDashboardCli(argv: readonly string[]): Promise<number> {
  const program = new Command('kq dashboard')
    .description('The kq dashboard: live web UI, Flower-compatible REST API and Prometheus metrics.')
    .option('-A, --app <module>', 'the module that exports your App')
    .option('-b, --broker <url>', 'broker URL (default: KQ_BROKER_URL, CELERY_BROKER_URL or the app)')
    .option('--result-backend <url>', 'result backend URL (for task results and apply)')
    .option('--port <port>', 'port to serve on', port, 5555)
    .option('--address <address>', 'address to listen on', '127.0.0.1')
    .option('--auth-file <file>', 'basic auth: a file of user:password lines allowed in (or set KQ_DASHBOARD_AUTH=user:password[,…])')
    // Flower's flag, refused: the passwords would be in `ps`. Hidden, so that it is named in the refusal, not offered.
    .addOption(new Option('--basic-auth <pairs>').hideHelp())
    .option('--trust-proxy', 'behind a reverse proxy: take the scheme and host from its X-Forwarded-Proto/X-Forwarded-Host')
    .option('--max-tasks <n>', 'tasks kept in memory', positive)
    .option('--url-prefix <path>', 'serve everything under this path (behind a proxy), e.g. /flower')
    .option('--dead-letter-queue <names>', 'RabbitMQ: the dead-letter queue(s) the Dead letters page reads (comma-separated)', (value: string) => value.split(',').filter(Boolean))
    .option('--state-file <path>', 'keep what it saw across restarts in this file (Flower\'s --persistent)')
    .exitOverride()
    .showSuggestionAfterError();
  let flags: DashboardFlags;
  try {
    program.parse([...argv], { from: 'user' });
    flags = program.opts<DashboardFlags>();
  } catch (error) {
    const code = (error as { code?: string }).code;
    return code === 'commander.helpDisplayed' || code === 'commander.help' ? 0 : 2;
  }
  if (flags.basicAuth !== undefined) {
    console.error(BASIC_AUTH_REFUSED);
    return 2;
  }
  try {
    const app = flags.app ? await loadAppModule(flags.app) : new App('kq-dashboard');
    const broker = flags.broker ?? process.env['KQ_BROKER_URL'] ?? process.env['CELERY_BROKER_URL'];
    if (broker) app.conf.broker = broker;
    else if (app.conf.broker.startsWith('memory://')) {
      throw new KqError('No broker is configured: pass -b redis://127.0.0.1:6379/0 (or amqp://…, postgresql://…), set KQ_BROKER_URL, or load an app with -A.');
    }
    const backend = flags.resultBackend ?? process.env['KQ_RESULT_BACKEND'] ?? process.env['CELERY_RESULT_BACKEND'];
    if (backend) app.conf.backend = backend;
    const basicAuth = await readAuthCredentials(flags.authFile);
    // One-shot at start: a wrong URL is one line, not a silent retry loop.
    app.conf.brokerConnectionMaxRetries = 0;
    const dashboard = new Dashboard({ app, port: flags.port, address: flags.address, ...(basicAuth.length > 0 ? { basicAuth } : {}), ...(flags.trustProxy ? { trustProxy: true } : {}), ...(flags.maxTasks ? { maxTasks: flags.maxTasks } : {}), ...(flags.urlPrefix ? { urlPrefix: flags.urlPrefix } : {}), ...(flags.stateFile ? { stateFile: flags.stateFile } : {}), ...(flags.deadLetterQueue ? { deadLetterQueues: flags.deadLetterQueue } : {}) });
    const url = await dashboard.start();
    console.log(`kq dashboard on ${url}`);
    await stopSignalReceived();
    await dashboard.close();
    await app.close();
    return 0;
  } catch (error) {
    console.error(`kq dashboard: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}
