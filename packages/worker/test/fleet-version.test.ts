import { describe, expect, it } from 'vitest';
import { fleetCeleryRelease, redeliveredAsFleet, revokedReplyText } from '../src/cluster/fleet-version';

const peer = (fields: Record<string, unknown>): { fields: Record<string, unknown> } => ({ fields });

describe("replies shaped by the fleet's Celery version", () => {
  it("takes the oldest Python worker's sw_ver, ignoring kq peers and unreadable versions", () => {
    expect(fleetCeleryRelease([])).toBeUndefined();
    expect(fleetCeleryRelease([peer({ sw_ident: 'kq', sw_ver: '0.1.0' })])).toBeUndefined();
    expect(
      fleetCeleryRelease([
        peer({ sw_ident: 'py-celery', sw_ver: '5.6.3' }),
        peer({ sw_ident: 'py-celery', sw_ver: '5.5.3' }),
        peer({ sw_ident: 'py-celery', sw_ver: 'garbage' }),
        peer({ sw_ident: 'py-celery' }),
      ]),
    ).toEqual([5, 5, 3]);
  });

  it("writes revoke's ids as 5.5 and 5.6 do (a Python set) or as 5.2 does (joined)", () => {
    expect(revokedReplyText(['a', 'b', 'a'])).toBe("tasks {'a', 'b'} flagged as revoked");
    expect(revokedReplyText(['a'], [5, 6, 0])).toBe("tasks {'a'} flagged as revoked");
    expect(revokedReplyText([], [5, 6, 3])).toBe('tasks set() flagged as revoked');
    expect(revokedReplyText(['a', 'b'], [5, 5, 3])).toBe("tasks {'a', 'b'} flagged as revoked");
    expect(revokedReplyText(['a', 'b'], [5, 2, 6])).toBe('tasks a, b flagged as revoked');
  });

  it("shows an unmarked first delivery's redelivered as 5.5+ does (False) or as 5.2 does (None)", () => {
    expect(redeliveredAsFleet(null)).toBe(false);
    expect(redeliveredAsFleet(null, [5, 5, 3])).toBe(false);
    expect(redeliveredAsFleet(null, [5, 2, 6])).toBeNull();
    expect(redeliveredAsFleet(true, [5, 2, 6])).toBe(true);
    expect(redeliveredAsFleet(false, [5, 2, 6])).toBe(false);
  });
});
