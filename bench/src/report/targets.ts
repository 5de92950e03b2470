// The goals issue #8 sets, as ratios read from one run's outcomes. They are reported, never asserted.
import type { BrokerKind } from '../protocol';
import type { Workload } from '../cases';
import { figures, type CaseOutcome } from '../outcome';
import { SYSTEM_NAMES, type SystemId } from '../systems';

export interface TargetCheck {
  goal: string;
  /** "kq 41 200/s vs bee-queue, concurrency 100 18 900/s = 2.18×" */
  measured: string;
  /** null: a case it needs was not run or failed. */
  met: boolean | null;
}

const PEERS: readonly SystemId[] = ['bullmq', 'bee-queue', 'celery-node', 'python-celery'];

interface Pick {
  label: string;
  value: number;
}

function rate(outcomes: readonly CaseOutcome[], broker: BrokerKind, workload: Workload, match: (o: CaseOutcome) => boolean): Pick | null {
  let best: Pick | null = null;
  for (const outcome of outcomes) {
    const c = outcome.case;
    if (c.broker !== broker || c.workload !== workload || !match(outcome)) continue;
    const f = figures(outcome);
    if (f?.kind !== 'rate') continue;
    if (!best || f.rate.median > best.value) best = { label: c.label, value: f.rate.median };
  }
  return best;
}

function latency(outcomes: readonly CaseOutcome[], broker: BrokerKind, match: (o: CaseOutcome) => boolean, which: 'p50' | 'p99'): Pick | null {
  let best: Pick | null = null;
  for (const outcome of outcomes) {
    const c = outcome.case;
    if (c.broker !== broker || c.workload !== 'W3' || !match(outcome)) continue;
    const f = figures(outcome);
    if (f?.kind !== 'latency') continue;
    if (!best || f[which].median < best.value) best = { label: c.label, value: f[which].median };
  }
  return best;
}

const isKq = (o: CaseOutcome): boolean => o.case.system === 'kq';
const isPeer = (o: CaseOutcome): boolean => PEERS.includes(o.case.system);
const isSystem = (system: SystemId) => (o: CaseOutcome): boolean => o.case.system === system;
const hasMode = (mode: 'awaited' | 'bulk') => (o: CaseOutcome): boolean => o.case.mode === mode;
const both = (...tests: Array<(o: CaseOutcome) => boolean>) => (o: CaseOutcome): boolean => tests.every((test) => test(o));

function formatRate(value: number): string {
  return `${Math.round(value).toLocaleString('en-US')}/s`;
}

function ratioCheck(goal: string, kq: Pick | null, other: Pick | null, atLeast: number): TargetCheck {
  if (!kq || !other) return { goal, measured: `not measured (${!kq ? 'kq' : 'the peer'} case missing or failed)`, met: null };
  const ratio = kq.value / other.value;
  return {
    goal,
    measured: `${kq.label} ${formatRate(kq.value)} vs ${other.label} ${formatRate(other.value)}: **${ratio.toFixed(2)}×**`,
    met: ratio >= atLeast,
  };
}

export function checkTargets(outcomes: readonly CaseOutcome[]): TargetCheck[] {
  const kqDrain = rate(outcomes, 'redis', 'W2', both(isKq, (o) => o.case.concurrency === 100 && o.case.variant === null));
  const checks: TargetCheck[] = [
    ratioCheck('W2 drain, Redis: kq ≥ 2× the fastest peer', kqDrain, rate(outcomes, 'redis', 'W2', isPeer), 2),
    ratioCheck(`W2 drain, Redis: kq ≥ 3× ${SYSTEM_NAMES.bullmq}`, kqDrain, rate(outcomes, 'redis', 'W2', isSystem('bullmq')), 3),
    ratioCheck(`W2 drain, Redis: kq ≥ 10× ${SYSTEM_NAMES['python-celery']}`, kqDrain, rate(outcomes, 'redis', 'W2', isSystem('python-celery')), 10),
    ratioCheck(
      'W1 enqueue, Redis: kq awaited ≥ 1.5× the fastest peer awaited',
      rate(outcomes, 'redis', 'W1', both(isKq, hasMode('awaited'))),
      rate(outcomes, 'redis', 'W1', both(isPeer, hasMode('awaited'))),
      1.5,
    ),
    ratioCheck(
      'W1 enqueue, Redis: kq bulk ≥ the fastest peer bulk',
      rate(outcomes, 'redis', 'W1', both(isKq, hasMode('bulk'))),
      rate(outcomes, 'redis', 'W1', both(isPeer, hasMode('bulk'))),
      1,
    ),
  ];

  const kqP50 = latency(outcomes, 'redis', isKq, 'p50');
  const peerP50 = latency(outcomes, 'redis', isPeer, 'p50');
  checks.push(
    kqP50 && peerP50
      ? {
          goal: 'W3 round trip, Redis: kq p50 ≤ the fastest peer p50',
          measured: `kq ${kqP50.value.toFixed(3)} ms vs ${peerP50.label} ${peerP50.value.toFixed(3)} ms`,
          met: kqP50.value <= peerP50.value,
        }
      : { goal: 'W3 round trip, Redis: kq p50 ≤ the fastest peer p50', measured: 'not measured', met: null },
  );
  const kqP99 = latency(outcomes, 'redis', isKq, 'p99');
  checks.push(
    kqP99
      ? { goal: 'W3 round trip, Redis: kq p99 ≤ 3 ms', measured: `kq ${kqP99.value.toFixed(3)} ms`, met: kqP99.value <= 3 }
      : { goal: 'W3 round trip, Redis: kq p99 ≤ 3 ms', measured: 'not measured', met: null },
  );

  const kqAmqp = rate(outcomes, 'amqp', 'W2', both(isKq, (o) => o.case.concurrency === 100));
  checks.push(
    ratioCheck('W2 drain, RabbitMQ: kq ≥ 0.75× raw amqplib consume+ack', kqAmqp, rate(outcomes, 'amqp', 'W2', (o) => isSystem('raw-amqplib')(o) && o.case.variant === null), 0.75),
    ratioCheck(`W2 drain, RabbitMQ: kq ≥ 1.5× ${SYSTEM_NAMES['celery-node']}`, kqAmqp, rate(outcomes, 'amqp', 'W2', isSystem('celery-node')), 1.5),
  );
  return checks;
}
