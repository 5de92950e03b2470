import { arch, release, type as osType } from 'node:os';
import { Exchange, Queue, pythonRepr, sanitizeUrl } from '@kq/core';
import { DEFAULT_CONFIG, type AppConfig } from '../config/config';
import { KQ_VERSION, SOFTWARE_INFO } from '../protocol/software-info';

/** kq setting names whose Celery name is not simply the snake_case form. */
const CELERY_NAMES: Readonly<Partial<Record<keyof AppConfig, string>>> = {
  broker: 'broker_url',
  backend: 'result_backend',
};

/**
 * `inspect conf`: the app's settings under Celery's names (`task_default_queue`), only those that differ from the
 * defaults unless `withDefaults`. Values that are not plain JSON become repr-like strings, and passwords in URLs are
 * masked (the reply travels over the broker).
 */
export function confTable(conf: Readonly<AppConfig>, withDefaults = false): Record<string, unknown> {
  const table: Record<string, unknown> = {};
  for (const key of Object.keys(conf) as Array<keyof AppConfig>) {
    const value = conf[key];
    if (!withDefaults && sameValue(value, DEFAULT_CONFIG[key])) continue;
    const name = CELERY_NAMES[key] ?? snakeCase(key);
    table[name] = censored(name, jsonSafe(value));
  }
  return table;
}

/** Celery's `HIDDEN_SETTINGS`: settings whose value is never shown. */
const HIDDEN_SETTINGS = /API|TOKEN|KEY|SECRET|PASS|PROFANITIES_LIST|SIGNATURE|DATABASE/i;
/** Celery's mask. */
const MASK = '********';

/**
 * Celery's `filter_hidden_settings`: nested settings censored the same way, secret-looking names masked whole, and
 * the password in broker and backend URLs masked with Celery's eight stars.
 */
function censored(name: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, item]) => [key, censored(key, item)]));
  }
  if (HIDDEN_SETTINGS.test(name)) return MASK;
  if (typeof value === 'string' && (name.toLowerCase().includes('broker_url') || name.toLowerCase().includes('backend'))) {
    return value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)\*\*@/i, `$1${MASK}@`);
  }
  return value;
}

/**
 * A value with its secrets masked, by the rule `inspect conf` uses: under a secret-looking name (Celery's
 * HIDDEN_SETTINGS) whole, and passwords in URLs. For what is shown beside the settings: the broker's transport
 * options in `stats`, and what the dashboard serves of any worker's replies (Python's `stats` shows them in the clear).
 */
export function hideSecrets(value: unknown, name = ''): unknown {
  if (Array.isArray(value)) return value.map((item) => hideSecrets(item, name));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, item]) => [key, hideSecrets(item, key)]));
  }
  if (name && HIDDEN_SETTINGS.test(name) && value !== null && value !== undefined) return MASK;
  return typeof value === 'string' ? sanitizeUrl(value) : value;
}

/** `inspect report`: Celery's bug-report text, for a kq worker. */
export function bugReport(conf: Readonly<AppConfig>, transportName: string): string {
  const settings = Object.entries(confTable(conf))
    .map(([key, value]) => `${key}: ${pythonRepr(value)}`)
    .join('\n');
  return [
    '',
    `software -> kq:${KQ_VERSION} node:${process.versions.node}`,
    `platform -> system:${SOFTWARE_INFO.sw_sys} arch:${arch()}`,
    `            kernel version:${release()} imp:Node.js (${osType()})`,
    'loader   -> kq',
    `settings -> transport:${transportName} results:${conf.backend ? sanitizeUrl(conf.backend) : 'disabled'}`,
    '',
    settings,
    '',
  ].join('\n');
}

function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  try {
    return JSON.stringify(jsonSafe(a)) === JSON.stringify(jsonSafe(b));
  } catch {
    return false;
  }
}

function jsonSafe(value: unknown): unknown {
  if (value === null || typeof value === 'boolean' || typeof value === 'number') return value;
  if (typeof value === 'string') return sanitizeUrl(value);
  if (typeof value === 'function') return `<function ${value.name || 'anonymous'}>`;
  if (value instanceof Queue) {
    const exchange = value.exchange;
    return `<unbound Queue ${value.name} -> ${exchange ? `<unbound Exchange ${exchange.name}(${exchange.type})>` : 'None'} -> ${value.routingKey ?? ''}>`;
  }
  if (value instanceof Exchange) return `<unbound Exchange ${value.name}(${value.type})>`;
  if (Array.isArray(value)) return value.map(jsonSafe);
  if (typeof value === 'object') return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, jsonSafe(v)]));
  return String(value);
}
