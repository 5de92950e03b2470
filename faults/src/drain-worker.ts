/**
 * The worker under test, in a process of its own: acks-late tasks that record every start and finish in the ledger.
 * Configured by environment: FAULTS_BROKER, FAULTS_QUEUE, FAULTS_LEDGER, FAULTS_CONCURRENCY, FAULTS_SHUTDOWN_TIMEOUT.
 */
import { Queue } from '@kq/core';
import { App, Logger } from '@kq/worker';
import { Ledger } from './ledger';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const ledger = new Ledger(env('FAULTS_LEDGER'));
const queueArguments = JSON.parse(process.env['FAULTS_QUEUE_ARGUMENTS'] ?? '{}') as Record<string, unknown>;
const app = new App('faults', {
  broker: env('FAULTS_BROKER'),
  taskDefaultQueue: env('FAULTS_QUEUE'),
  ...(Object.keys(queueArguments).length > 0 ? { taskQueues: [new Queue(env('FAULTS_QUEUE'), { durable: true, arguments: queueArguments })] } : {}),
  controlExchange: `${env('FAULTS_QUEUE')}.ctl`,
  // Short leases so a crashed worker's tasks come back within the scenario; retries that outlast a broker restart.
  brokerTransportOptions: {
    ...(JSON.parse(process.env['FAULTS_TRANSPORT_OPTIONS'] ?? '{}') as Record<string, unknown>),
    leaseMs: 3000,
    sweepIntervalMs: 500,
    logger: { warn: () => undefined },
  },
  taskPublishRetryPolicy: { maxRetries: 200, intervalStart: 100, intervalStep: 100, intervalMax: 500 },
});

app.task(
  'faults.work',
  async (_ctx, id: string, ms: number) => {
    ledger.record('start', id);
    await new Promise((resolve) => setTimeout(resolve, ms));
    ledger.record('finish', id);
    return id;
  },
  { acksLate: true },
);

/** CPU-bound: blocks the event loop (no heartbeat, no I/O) for `ms`. */
app.task(
  'faults.block',
  (_ctx, id: string, ms: number) => {
    ledger.record('start', id);
    const until = Date.now() + ms;
    while (Date.now() < until) {
      // busy
    }
    ledger.record('finish', id);
    return id;
  },
  { acksLate: true },
);

const worker = app.worker({
  hostname: `faults-${process.pid}@localhost`,
  concurrency: Number(process.env['FAULTS_CONCURRENCY'] ?? 8),
  prefetchMultiplier: Number(process.env['FAULTS_PREFETCH_MULTIPLIER'] ?? 2),
  logger: new Logger('faults', { level: 'error' }),
  ...(process.env['FAULTS_SHUTDOWN_TIMEOUT'] ? { shutdownTimeout: Number(process.env['FAULTS_SHUTDOWN_TIMEOUT']) } : {}),
  cluster: false,
  enableRemoteControl: false,
});
// After the ack's own turn: on AMQP the frame is written to the socket in the turn after the ack is handed over.
worker.on('settled', (request, action) => {
  if (action !== 'requeue') setImmediate(() => ledger.record('acked', request.id));
});
worker.installSignalHandlers(() => void app.close().finally(() => process.exit(0)));
await worker.start();
process.stdout.write('ready\n');
