export class KqWorkerError extends Error {}
