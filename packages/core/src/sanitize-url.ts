/**
 * A broker or backend URL with its password replaced by `**` (Kombu's `maybe_sanitize_url`), for logs, errors and
 * anything a person or a page sees. URLs without a password come back unchanged.
 */
export function sanitizeUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)[^@/]*@/i, '$1**@');
}
