/** A thrown value in one log line: `Name: message` for an Error, else its string form. */
export function describeError(value: unknown): string {
  return value instanceof Error ? `${value.name}: ${value.message}` : String(value);
}
