/**
 * One Celery event as it travels on the `celeryev` exchange (docs/wire.md#events): a flat JSON object whose standard
 * fields come in this order — `hostname, utcoffset, pid, clock, <fields…>, timestamp, type` — because that is the order
 * Python's `Event()` builds them in and monitors print them in.
 */
export interface CeleryEvent {
  /** `worker-heartbeat`, `task-succeeded`, …: group, dash, subject. */
  type: string;
  /** Node name of the sender (`name@host`; clients use `gen<pid>@<host>`). */
  hostname: string;
  /** Hours west of UTC (Python's `time.timezone // 3600`). */
  utcoffset: number;
  /** Process id of the sender. */
  pid: number;
  /** The sender's app Lamport clock, or null when sent "blind". */
  clock: number | null;
  /** Seconds since the epoch (float), when it was sent. */
  timestamp: number;
  [field: string]: unknown;
}

/** An event after a receiver processed it: the clock is set and `local_received` added (docs/wire.md#events). */
export interface ReceivedEvent extends CeleryEvent {
  clock: number;
  /** Seconds since the epoch when this process received it. */
  local_received: number;
}

/** The fields a sender stamps on every event. */
export interface EventStamp {
  hostname: string;
  pid: number;
  clock: number | null;
  utcoffset?: number;
  timestamp?: number;
}

/**
 * Builds an event like Python's `Event(type, hostname=…, utcoffset=…, pid=…, clock=…, **fields)`: the stamp first,
 * then the fields, then `timestamp` (unless a field set it) and `type` last.
 */
export function createEvent(type: string, fields: Readonly<Record<string, unknown>>, stamp: EventStamp): CeleryEvent {
  const event: Record<string, unknown> = {
    hostname: stamp.hostname,
    utcoffset: stamp.utcoffset ?? utcOffsetHours(),
    pid: stamp.pid,
    clock: stamp.clock,
  };
  for (const [key, value] of Object.entries(fields)) {
    if (key === 'type') continue; // Python sets the type last, over any field of that name
    defineField(event, key, value);
  }
  if (!('timestamp' in fields)) event['timestamp'] = stamp.timestamp ?? nowSeconds();
  event['type'] = type;
  return event as CeleryEvent;
}

/**
 * Seconds since the epoch, Python's `time.time()`. Millisecond resolution: a monotonic source would give more digits
 * but drift from the wall clock over days, and monitors compare these with their own clocks.
 */
export function nowSeconds(): number {
  return Date.now() / 1000;
}

/** The routing key an event is published with: its type with every `-` replaced by `.` (`worker.heartbeat`). */
export function eventRoutingKey(type: string): string {
  return type.replace(/-/g, '.');
}

/** The group of an event type (`task` for `task-succeeded`), what a dispatcher's `groups` filter on. */
export function eventGroup(type: string): string {
  const dash = type.indexOf('-');
  return dash === -1 ? type : type.slice(0, dash);
}

/**
 * Celery's `utcoffset()`: hours **west** of UTC, floor-divided, daylight saving included (UTC+2 ⇒ -2,
 * UTC-5 ⇒ 5, UTC+5:30 ⇒ -6). JavaScript's `getTimezoneOffset()` already counts minutes west.
 */
export function utcOffsetHours(at: Date = new Date()): number {
  return Math.floor(at.getTimezoneOffset() / 60) || 0; // `|| 0` turns -0 into 0
}

/**
 * Celery's `adjust_timestamp(ts, offset)`: moves a sender's timestamp into this host's zone,
 * `ts - (offset - local_offset) * 3600`.
 */
export function adjustTimestamp(timestamp: number, offset: number, localOffset: number = utcOffsetHours()): number {
  return timestamp - (offset - localOffset) * 3600;
}

/** True for a decoded body that can be an event: an object with a string `type`. */
export function isEventLike(value: unknown): value is Record<string, unknown> & { type: string } {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && typeof (value as { type?: unknown }).type === 'string';
}

/** Sets a key even when it is `__proto__` (fields come from the wire). */
function defineField(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}
