import { KqWorkerError } from '../errors/errors';
export const node = (): Error => new KqWorkerError();
