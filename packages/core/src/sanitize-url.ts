/**
 * A broker or backend URL with its password replaced by `**` (Kombu's `maybe_sanitize_url`), for logs, errors and
 * anything a person or a page sees. URLs without a password come back unchanged; in a list of brokers
 * (`amqp://u:p@h1//;amqp://u:p@h2//`) every one is masked.
 */
export function sanitizeUrl(url: string): string {
  return url
    .split(';')
    .map((part) => part.replace(/^(\s*[a-z][a-z0-9+.-]*:\/\/[^:/@]*:)[^@/]*@/i, '$1**@'))
    .join(';');
}
