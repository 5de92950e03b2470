// The `kq-dashboard` bin (also reached as `kq dashboard`).
import { runDashboardCli } from './dashboard-cli';

void runDashboardCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
  if (code !== 0) process.exit(code);
});
