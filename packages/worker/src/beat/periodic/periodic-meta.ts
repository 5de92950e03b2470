/** The header a periodic task's messages carry (a custom Celery header: it becomes `ctx.request.headers.kq_periodic`). */
export const PERIODIC_HEADER = 'kq_periodic';

/** Where a message stands in its cycle. */
export interface PeriodicMeta {
  /** The cycle (a uuid made when the cycle was created). */
  readonly cycle: string;
  /** Position in the cycle: +1 for every message (each run and each retry). The register holds the live one. */
  readonly step: number;
  /** Run number, from 1. Retries of a run keep it. */
  readonly run: number;
  /** Attempt of the run, from 1. */
  readonly attempt: number;
  /** When this message is due (epoch ms). */
  readonly due: number;
  /** The run's slot (epoch ms): the due time of its first attempt; fixed-rate cycles count from it. */
  readonly slot: number;
}

/** The periodic meta of a message's headers, or null for an ordinary call of the task (or an unreadable header). */
export function readPeriodicMeta(headers: Readonly<Record<string, unknown>>): PeriodicMeta | null {
  const value = headers[PERIODIC_HEADER];
  if (typeof value !== 'object' || value === null) return null;
  const meta = value as Record<string, unknown>;
  const { cycle, step, run, attempt, due, slot } = meta;
  if (typeof cycle !== 'string' || cycle === '') return null;
  for (const number of [step, run, attempt, due]) if (typeof number !== 'number' || !Number.isFinite(number)) return null;
  return {
    cycle,
    step: step as number,
    run: run as number,
    attempt: attempt as number,
    due: due as number,
    slot: typeof slot === 'number' && Number.isFinite(slot) ? slot : (due as number),
  };
}

/** The header value for `meta` (plain JSON numbers and strings, fine for AMQP field tables and Redis envelopes). */
export function periodicHeader(meta: PeriodicMeta): Record<string, string | number> {
  return { cycle: meta.cycle, step: meta.step, run: meta.run, attempt: meta.attempt, due: meta.due, slot: meta.slot };
}
