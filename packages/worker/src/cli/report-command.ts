import type { Command } from 'commander';
import { bugReport } from '../cluster/worker-conf';
import { globalOptions } from './global-options';
import { loadApp } from './load-app';

/** `kq report`: what `celery report` prints — versions, platform, transport and the app's settings (secrets masked). */
export function registerReportCommand(program: Command): void {
  program
    .command('report')
    .description('Print versions, platform and settings for a bug report (celery report); connects to nothing.')
    .action(async (_flags: unknown, command: Command) => {
      const app = await loadApp({ ...globalOptions(command), requireBroker: false });
      const scheme = app.conf.broker.split(':')[0] ?? 'memory';
      console.log(bugReport(app.conf, scheme));
    });
}
