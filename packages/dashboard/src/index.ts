// @kq/dashboard — see the fleet and steer it: a live web UI, Flower's REST API and Prometheus metrics.
export { Dashboard, type DashboardOptions } from './dashboard';
export { FleetState, type BeatSchedule, type FleetStateOptions, type InspectedWorker } from './fleet-state';
export { FlowerMetrics } from './flower-metrics';
export { overview, type Overview, type WorkerRow } from './overview';
export { flowerTask, queryTasks, queryableClusterTask, queryableFlowerTask, type FlowerTask, type QueryableTask, type TaskQuery } from './task-view';
export { QueueLengthSeries, ThroughputSeries, percentile, type ThroughputPoint } from './time-series';
export { CHANGING_METHODS, INSPECT_METHODS, WorkerInspector, type InspectMethod, type WorkerInspectorOptions } from './worker-inspector';
export { runDashboardCli } from './dashboard-cli';
export { loadFleetState, saveFleetState } from './state-file';
