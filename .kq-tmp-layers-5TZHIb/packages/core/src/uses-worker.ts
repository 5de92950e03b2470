import type { App } from '../../worker/src/app/app';
export type A = App;
