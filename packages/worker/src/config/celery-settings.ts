import { KqError } from '@kq/core';
import { DEFAULT_CONFIG, type AppConfig } from './config';

/**
 * Celery's setting names, as a Python `celeryconfig` spells them (`accept_content`, `task_acks_late`...): accepted
 * next to kq's camelCase names so settings copy across unchanged. Typed loosely: any `snake_case` key.
 */
export type CelerySettings = { readonly [setting: `${string}_${string}`]: unknown };

/** Celery names whose kq name is not their camelCase. */
const RENAMED: Readonly<Record<string, keyof AppConfig>> = {
  broker_url: 'broker',
  result_backend: 'backend',
  CELERY_BROKER_URL: 'broker',
  CELERY_RESULT_BACKEND: 'backend',
};

/**
 * The configuration with Celery-style keys turned into kq's (`accept_content` → `acceptContent`). A key that names no
 * setting is refused with the closest one, rather than silently ignored.
 */
export function normalizeSettings(config: Readonly<Record<string, unknown>>): Partial<AppConfig> {
  const known = new Set(Object.keys(DEFAULT_CONFIG));
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (!key.includes('_')) {
      out[key] = value;
      continue;
    }
    const name = RENAMED[key] ?? key.toLowerCase().replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());
    if (!known.has(name)) {
      throw new KqError(`Unknown setting ${JSON.stringify(key)}: kq has no ${name}. Settings are Celery's names (snake_case or camelCase); see AppConfig.`);
    }
    out[name] = value;
  }
  return out as Partial<AppConfig>;
}
