import { brokerReachable } from '@kq/test-harness';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ackPoolConfig, claimPoolConfig } from '../src/postgres-store';
import { withSessionSettings } from '../src/session-settings';
import { POSTGRES_URL } from './postgres-test-env';

const up = await brokerReachable('postgres');

describe.skipIf(!up)('PostgreSQL claims', () => {
  it('commit without waiting for the disk and never scan a whole queue: a lost claim only delivers its message again, and stale statistics cannot turn a claim of 64 into a sort of every ready row', async () => {
    const pool = new pg.Pool(claimPoolConfig(POSTGRES_URL));
    try {
      const { rows } = await pool.query<Record<string, string>>(
        `SELECT current_setting('synchronous_commit') AS sync, current_setting('enable_bitmapscan') AS bitmap,
                current_setting('enable_seqscan') AS seq, current_setting('application_name') AS name`,
      );
      expect(rows[0]).toEqual({ sync: 'off', bitmap: 'off', seq: 'off', name: 'kq claims' });
    } finally {
      await pool.end();
    }
  });

  it('acks commit without waiting for the disk either: a lost ack leaves its row leased, and the message is delivered again', async () => {
    const pool = new pg.Pool(ackPoolConfig(POSTGRES_URL));
    try {
      const { rows } = await pool.query<Record<string, string>>(
        `SELECT current_setting('synchronous_commit') AS sync, current_setting('plan_cache_mode') AS plans, current_setting('application_name') AS name`,
      );
      expect(rows[0]).toEqual({ sync: 'off', plans: 'force_generic_plan', name: 'kq acks' });
    } finally {
      await pool.end();
    }
  });

  it("keep the URL's own session options (a search_path) beside the claim settings", async () => {
    const separator = POSTGRES_URL.includes('?') ? '&' : '?';
    const pool = new pg.Pool(claimPoolConfig(`${POSTGRES_URL}${separator}options=-c%20search_path%3Dkq_elsewhere`));
    try {
      const { rows } = await pool.query<Record<string, string>>(
        "SELECT current_setting('search_path') AS path, current_setting('synchronous_commit') AS sync",
      );
      expect(rows[0]).toEqual({ path: 'kq_elsewhere', sync: 'off' });
    } finally {
      await pool.end();
    }
  });
});

describe('withSessionSettings', () => {
  it('adds -c settings to a URL without options and after the options a URL has', () => {
    expect(new URL(withSessionSettings('postgresql://u@h:5432/db', { a: '1' })).searchParams.get('options')).toBe('-c a=1');
    const merged = withSessionSettings('postgresql://u@h:5432/db?sslmode=require&options=-c%20search_path%3Ds', { a: '1', b: 'off' });
    expect(new URL(merged).searchParams.get('options')).toBe('-c search_path=s -c a=1 -c b=off');
    expect(new URL(merged).searchParams.get('sslmode')).toBe('require');
  });
});
