import { pythonSetRepr } from '@kq/core';
import type { ClusterWorker } from '../events/cluster-state';

/** A Celery release as [major, minor, patch]. */
export type CeleryRelease = readonly [number, number, number];

/** The newest Celery whose replies kq knows: what kq answers as when no Python peer says which Celery it runs. */
export const NEWEST_CELERY: CeleryRelease = [5, 6, 3];

/**
 * The Celery the fleet's Python workers run, read from the `sw_ver` of their heartbeats and hellos (`sw_ident`
 * `py-celery`): the oldest of them, so a reply whose shape changed suits every Celery reading it; undefined when no
 * Python worker is known.
 */
export function fleetCeleryRelease(peers: Iterable<Pick<ClusterWorker, 'fields'>>): CeleryRelease | undefined {
  let oldest: CeleryRelease | undefined;
  for (const { fields } of peers) {
    if (fields['sw_ident'] !== 'py-celery' || typeof fields['sw_ver'] !== 'string') continue;
    const release = parseRelease(fields['sw_ver']);
    if (release && (!oldest || compareReleases(release, oldest) < 0)) oldest = release;
  }
  return oldest;
}

/**
 * The `revoke` reply's `tasks … flagged as revoked` text as that Celery writes it: since 5.3's revoke rework (read in
 * 5.5.3 and 5.6.3) the set of ids (`tasks {'id1', 'id2'} flagged as revoked`), before it (5.2.6) the ids joined
 * (`tasks id1, id2 flagged as revoked`).
 */
export function revokedReplyText(ids: readonly string[], release: CeleryRelease = NEWEST_CELERY): string {
  const listed = compareReleases(release, [5, 3, 0]) >= 0 ? pythonSetRepr(ids) : ids.join(', ');
  return `tasks ${listed} flagged as revoked`;
}

/**
 * `delivery_info.redelivered` of a request in `inspect` replies: a transport that marks only redeliveries (Kombu's
 * virtual ones, Redis) leaves a first delivery unmarked, which Celery 5.2.6 shows as None and 5.5+ as False
 * (`delivery_info.get('redelivered', False)`, read in 5.5.3 and 5.6.3).
 */
export function redeliveredAsFleet(redelivered: boolean | null, release: CeleryRelease = NEWEST_CELERY): boolean | null {
  if (redelivered !== null) return redelivered;
  return compareReleases(release, [5, 5, 0]) >= 0 ? false : null;
}

function parseRelease(version: string): CeleryRelease | undefined {
  const match = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(version);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)] : undefined;
}

function compareReleases(a: CeleryRelease, b: CeleryRelease): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}
