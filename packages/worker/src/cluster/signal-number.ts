import { constants } from 'node:os';

/** An error whose Python name is given, so a remote-control error reply reads like Python's (`TypeError('…')`). */
export class PythonNamedError extends Error {
  constructor(pythonName: string, message: string) {
    super(message);
    this.name = pythonName;
  }
}

/**
 * Celery's `platforms.signals.signum(name)`: a number is taken as it is; a name must be upper case, with or without
 * the `SIG` prefix (`TERM`, `SIGKILL`). Unknown names fail as Python's do.
 */
export function signalNumber(signal: unknown): number {
  if (typeof signal === 'number' && Number.isInteger(signal)) return signal;
  if (typeof signal !== 'string' || signal !== signal.toUpperCase() || !/[A-Z]/.test(signal)) {
    throw new PythonNamedError('TypeError', 'signal name must be uppercase string.');
  }
  const name = signal.startsWith('SIG') ? signal : `SIG${signal}`;
  const number = (constants.signals as Record<string, number | undefined>)[name];
  if (number === undefined) throw new PythonNamedError('AttributeError', `module 'signal' has no attribute '${name}'`);
  return number;
}

/** The signal's name for a number (`15` → `SIGTERM`), or the number as text when unknown. */
export function signalName(signum: number): string {
  for (const [name, number] of Object.entries(constants.signals)) if (number === signum) return name;
  return String(signum);
}
