/** Celery's default heartbeat interval, seconds (Heart sends at it; Gossip assumes it for a peer that gives none). */
export const DEFAULT_HEARTBEAT_INTERVAL = 2.0;
