// A worker in a Celery fleet: event steps, Mingle, Gossip, heartbeats, the state file and the remote-control commands.
export { clusterSteps, isClusterStep, withClusterSteps, ClusterBindingStep } from './cluster-steps';
export { ClusterContext, clusterOf } from './cluster-context';
export { clusterOptionsFromFlags, type ClusterOptions, type WorkerClusterFlagValues } from './cluster-options';
export { EventsStep } from './events-step';
export { HeartStep } from './heart';
export { DEFAULT_HEARTBEAT_INTERVAL } from './heartbeat-interval';
export { MingleStep, mingle, syncWithNode, type MingleReply } from './mingle';
export { Gossip, DEFAULT_GOSSIP_INTERVAL } from './gossip';
export type { ElectionHandler, GossipEvents, GossipOptions } from './gossip-options';
export { GossipStep } from './gossip-step';
export { heapPush, type ElectionEntry } from './election-heap';
export { StateDb, StateDbStep, parseStateFile, type StateFile } from './state-db';
export { RemoteControlStep, remoteControlCommands } from './remote-control';
export { queueControlOf, type TaskQueueControl } from './queue-control';
export { exchangeAsDict, queueAsDict } from './queue-as-dict';
export { DEFAULT_TASK_INFO_ITEMS, registeredTasks, type TaskOverrides } from './registered-tasks';
export { workerStats, poolInfo, brokerInfo, rusage } from './worker-stats';
export { confTable, bugReport, hideSecrets } from './worker-conf';
