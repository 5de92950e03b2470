export { ControlLog, type PeriodicEvent, type PeriodicRecord } from './control-log';
export type { CycleAdvance, CycleBegin, CycleMarker, CycleRegister, CycleState } from '@kq/core';
export { definePeriodic, periodicTasks, PeriodicTask, type PeriodicOptions, type PeriodicTaskEvents } from './define-periodic';
export { StopPeriodic } from './errors';
export { MemoryCycleRegister } from '@kq/core';
export { PERIODIC_HEADER, readPeriodicMeta, type PeriodicMeta } from './periodic-meta';
export { periodicStep } from './periodic-step';
