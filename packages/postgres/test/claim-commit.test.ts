import { brokerReachable } from '@kq/test-harness';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { claimPoolConfig } from '../src/postgres-store';
import { POSTGRES_URL } from './postgres-test-env';

const up = await brokerReachable('postgres');

describe.skipIf(!up)('PostgreSQL claims', () => {
  it('commit without waiting for the disk: a lost claim only delivers its message again, so a round trip waits for two flushes, not three', async () => {
    const pool = new pg.Pool(claimPoolConfig(POSTGRES_URL));
    try {
      const { rows } = await pool.query<{ setting: string; name: string }>(
        "SELECT current_setting('synchronous_commit') AS setting, current_setting('application_name') AS name",
      );
      expect(rows[0]).toEqual({ setting: 'off', name: 'kq claims' });
    } finally {
      await pool.end();
    }
  });
});
