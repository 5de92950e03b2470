import { brandClass, KqError } from '@kq/core';

/** A beat schedule (or one of its entries) cannot be used as written; the message says which field and why. */
export class BeatScheduleError extends KqError {}
brandClass(BeatScheduleError, '@kq/worker:BeatScheduleError');
