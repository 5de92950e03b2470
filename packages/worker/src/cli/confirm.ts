import { KqError } from '@kq/core';

/**
 * Asks a yes/no question on the terminal, as `celery purge` does before deleting. With no terminal to ask on, the
 * answer is no: `refusal` tells the person which flag says yes.
 */
export async function confirm(question: string, refusal: string): Promise<boolean> {
  if (!process.stdin.isTTY) throw new KqError(refusal);
  const { createInterface } = await import('node:readline/promises'); // loaded by the commands that ask, not by every one
  const terminal = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await terminal.question(`${question} [y/N] `)).trim());
  } finally {
    terminal.close();
  }
}
