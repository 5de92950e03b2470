// `pnpm bench:fleet`: fleets of kq workers (N = 10, 50, 100, 200) and of Python Celery workers (the anchor, N = 10, 50)
// on a private Redis and a private RabbitMQ, with the dashboard watching; writes bench/FLEET.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { acquireRunLock } from '../run-lock';
import { installFleetExitHooks, type FleetSystem } from './fleet-processes';
import { renderFleetReport } from './fleet-report';
import { runFleet, type FleetRunResult } from './fleet-run';
import { PrivateRabbit, PrivateRedis, type FleetBroker } from './private-brokers';

const { values } = parseArgs({
  // pnpm passes the `--` of `pnpm bench:fleet -- --sizes 200` through; parseArgs would take what follows as positionals.
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: {
    sizes: { type: 'string', default: '10,50,100,200' },
    'python-sizes': { type: 'string', default: '10,50' },
    brokers: { type: 'string', default: 'redis,amqp' },
    idle: { type: 'string', default: '30' },
    batch: { type: 'string', default: '10' },
    out: { type: 'string', default: fileURLToPath(new URL('../../FLEET.md', import.meta.url)) },
    'max-minutes': { type: 'string', default: '60' },
    before: { type: 'string' },
    previous: { type: 'string' },
    from: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  process.stdout.write(
    'pnpm bench:fleet [-- --sizes 10,50,100,200 --python-sizes 10,50 --brokers redis,amqp --idle 30 --batch 10 --out FLEET.md]\n',
  );
  process.exit(0);
}

const sizes = values.sizes.split(',').map(Number);
const pythonSizes = values['python-sizes'].split(',').filter(Boolean).map(Number);
const brokers = values.brokers.split(',');
const log = (line: string): void => void process.stderr.write(`${line}\n`);

if (!values.from) acquireRunLock('pnpm bench:fleet', join(tmpdir(), 'kqbench-fleet.lock'));
installFleetExitHooks();
// Bounded in time whatever happens: the exit hook kills every fleet process group.
setTimeout(() => {
  log(`fleet bench: over ${values['max-minutes']} minutes, stopping`);
  process.exit(2);
}, Number(values['max-minutes']) * 60_000).unref();

// --from <json>: no fleets, FLEET.md rendered again from a run's results (the JSON it leaves in the temp dir).
const results: FleetRunResult[] = values.from ? (JSON.parse(readFileSync(values.from, 'utf8')) as FleetRunResult[]) : [];
if (values.from) brokers.length = 0;
const port = 17_000 + Math.floor(Math.random() * 500);
for (const kind of brokers) {
  const broker: FleetBroker & { start(): Promise<void> } = kind === 'redis' ? new PrivateRedis(port) : new PrivateRabbit(port + 1);
  log(`${kind}: starting a private broker`);
  await broker.start();
  try {
    const runs: [FleetSystem, number][] = [...sizes.map((n): [FleetSystem, number] => ['kq', n]), ...pythonSizes.map((n): [FleetSystem, number] => ['python', n])];
    for (const [system, size] of runs) {
      const largest = system === 'kq' ? Math.max(...sizes) : Math.max(...pythonSizes);
      results.push(
        await runFleet({
          system,
          broker,
          size,
          idleSeconds: Number(values.idle),
          batch: Number(values.batch),
          failure: size === largest,
          dashboardPort: port + 2,
          log,
        }),
      );
      writeFileSync(join(tmpdir(), 'kq-fleet-results.json'), JSON.stringify(results, null, 2));
    }
  } finally {
    await broker.destroy();
  }
}
// --before <json>: kq's rows of an earlier run (the results JSON a run leaves in the temp dir), shown apart.
const before = values.before ? (JSON.parse(readFileSync(values.before, 'utf8')) as FleetRunResult[]).filter((row) => row.system === 'kq') : [];
// --previous <json>: kq's rows of the run before bounded Mingle, shown apart too.
const previous = values.previous ? (JSON.parse(readFileSync(values.previous, 'utf8')) as FleetRunResult[]).filter((row) => row.system === 'kq') : [];
writeFileSync(values.out, renderFleetReport(results, { idleSeconds: Number(values.idle), batch: Number(values.batch), before, previous }));
log(`wrote ${values.out}`);
process.exit(0);
