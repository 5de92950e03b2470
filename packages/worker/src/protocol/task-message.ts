// The Celery task message (protocol v2, reading v1 too): its normalized shape and the codec between it and the wire.
export type {
  DecodeTaskOptions,
  EncodedTaskMessage,
  EncodeTaskOptions,
  SignatureJson,
  TaskMessage,
  TaskMessageInit,
} from './task-message-types';
export { encodeTaskMessage } from './encode-task-message';
export { decodeTaskMessage } from './decode-task-message';
