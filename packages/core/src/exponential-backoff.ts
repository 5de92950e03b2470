/**
 * Celery's exponential backoff (`get_exponential_backoff_interval`): `factor × 2^retries`, capped at `maximum`,
 * and with full jitter a uniform pick in [0, countdown] so that a thundering herd of retries spreads out. Unitless:
 * task retries count in seconds, the AMQP publisher's channel replacement in milliseconds.
 */
export function backoffCountdown(
  retries: number,
  options: { factor: number; maximum: number; jitter: boolean },
  random: () => number = Math.random,
): number {
  const countdown = Math.min(options.maximum, options.factor * 2 ** Math.max(0, retries));
  const jittered = options.jitter ? Math.floor(random() * (Math.floor(countdown) + 1)) : countdown;
  return Math.max(0, jittered);
}
