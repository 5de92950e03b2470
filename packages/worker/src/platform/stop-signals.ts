/** The signals that ask a kq process to stop: SIGTERM from a supervisor, SIGINT from Ctrl+C. */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * Calls `handler` on every SIGTERM/SIGINT with how many have arrived so far (1 for the first), so a caller can
 * escalate on a second one. Installing it replaces Node's default of exiting at once. Returns the uninstaller.
 */
export function onStopSignals(handler: (signal: NodeJS.Signals, count: number) => void): () => void {
  let count = 0;
  const listener = (signal: NodeJS.Signals): void => handler(signal, ++count);
  for (const signal of STOP_SIGNALS) process.on(signal, listener);
  return () => {
    for (const signal of STOP_SIGNALS) process.off(signal, listener);
  };
}

/**
 * Resolves on the first SIGTERM or SIGINT. Each signal's listener is a `once`, so a second signal of the same kind
 * gets Node's default again (the process exits) while the CLI is closing.
 */
export function stopSignalReceived(): Promise<void> {
  return new Promise((resolve) => {
    for (const signal of STOP_SIGNALS) process.once(signal, () => resolve());
  });
}
