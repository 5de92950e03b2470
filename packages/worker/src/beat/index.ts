export { Beat, type BeatEvents, type BeatOptions } from './beat';
export type {
  BeatLease,
  BeatLeaseListener,
  BeatLeaseOptions,
  BeatLeadership,
  CommitOutcome,
  TickCommit,
  TickPublication,
} from '@kq/core';
export { beatTaskId, deterministicTaskId } from './deterministic-id';
export { BeatScheduleError } from './errors';
export { MemoryBeatLease } from '@kq/core';
export { planTicks, type TickPlan } from './misfire';
export {
  MISFIRE_POLICIES,
  ScheduleEntry,
  type BeatEntryDefinition,
  type BeatTaskOptions,
  type EntryDefaults,
  type MisfirePolicy,
  type TickWindow,
} from './schedule-entry';
export { loadScheduleFile, parseSchedule, type BeatScheduleFile } from './schedule-file';
export { prepareTaskMessage, type PreparedTaskMessage, type TaskEmbed } from '../task/prepare-task-message';
