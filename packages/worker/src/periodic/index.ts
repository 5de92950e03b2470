export { ControlLog, type PeriodicEvent, type PeriodicRecord } from './control-log';
export type { CycleAdvance, CycleBegin, CycleMarker, CycleRegister, CycleState } from './cycle-register';
export { definePeriodic, periodicTasks, PeriodicTask, type PeriodicOptions, type PeriodicTaskEvents } from './define-periodic';
export { StopPeriodic } from './errors';
export { MemoryCycleRegister } from './memory-cycle-register';
export { PERIODIC_HEADER, readPeriodicMeta, type PeriodicMeta } from './periodic-meta';
export { periodicStep } from './periodic-step';
