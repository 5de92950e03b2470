import type { ResultBackend } from '@kq/core';
import type { ApplyOptions, TaskEmbed } from '../send/apply-options';
import type { DateDoneForm } from '../config/config';
import type { Revoker } from '../results/index';

/**
 * What the canvas needs of an app — sending, the result backend, routing, revoking. An interface the App satisfies,
 * so signatures never import the App (which imports tasks, which make signatures).
 */
export interface CanvasApp {
  readonly threadOid: string;
  readonly conf: { readonly resultExpires: number; readonly resultChordRetryInterval: number; readonly resultDateDone: DateDoneForm };
  sendTaskMessage(name: string, args: unknown[], options: ApplyOptions, embed?: TaskEmbed): Promise<string>;
  backend(): Promise<ResultBackend | null>;
  /** A call's options with the defaults of the named task (its queue, priority, limits) where it is registered here. */
  withTaskDefaults(name: string, options: ApplyOptions): ApplyOptions;
  /** The queue the router sends a task to, or null when the route names only an exchange. */
  routeQueue(name: string): string | null;
  readonly revoker: Revoker;
}
