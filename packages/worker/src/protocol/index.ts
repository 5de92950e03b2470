export {
  decodeTaskMessage,
  encodeTaskMessage,
  type DecodeTaskOptions,
  type EncodedTaskMessage,
  type EncodeTaskOptions,
  type SignatureJson,
  type TaskMessage,
  type TaskMessageInit,
} from './task-message';
export { formatIsoDate, parseIsoDate } from './iso-time';
export { assertTimeZone, localTimeToUtcMs, zoneOffsetMs } from './time-zone-offset';
export { anonNodename } from './nodename';
export { REPR_MAX_LENGTH, defaultArgsrepr, defaultKwargsrepr, truncateRepr } from './task-repr';
export { CELERY_52_HEADER_KEYS, CELERY_53_HEADER_KEYS, EMBED_KEYS, PROTOCOL_HEADER_KEYS } from './protocol-headers';
