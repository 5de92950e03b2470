// Celery events: dispatcher, receiver, the monitors' cluster State, and their text forms.
export { createEvent, eventGroup, eventRoutingKey, utcOffsetHours, adjustTimestamp, nowSeconds, type CeleryEvent, type EventStamp, type ReceivedEvent } from './event';
export { DEFAULT_EVENT_EXCHANGE, eventExchange } from './event-exchange';
export { EventDispatcher, type EventDispatcherOptions, type SendOptions } from './event-dispatcher';
export { EventReceiver, prepareEvent, type EventBinding, type EventHandler, type EventReceiverEvents, type EventReceiverOptions } from './event-receiver';
export {
  ClusterState,
  ClusterTask,
  ClusterWorker,
  HEARTBEAT_DRIFT_MAX,
  HEARTBEAT_EXPIRE_WINDOW,
  TASK_EVENT_TO_STATE,
  statePrecedence,
  type ClusterStateEvents,
  type ClusterStateOptions,
} from './cluster-state';
export { taskEventFields, resultRepr, exceptionRepr, type TaskEventKind } from './task-event-fields';
export { clientEventDispatcher, sendTaskSentEvent, taskSentFields, type TaskSentFields } from './task-sent';
export { KQ_VERSION, SOFTWARE_INFO, loadAverage, type SoftwareInfo } from '../protocol/software-info';
export { EventDumper, formatUtc, humanizeType } from './event-dump';
export { renderClusterView, type ClusterViewOptions } from './cluster-view';
