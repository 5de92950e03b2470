/**
 * A broker or backend URL with its password replaced by `**` (Kombu's `maybe_sanitize_url`), for logs, errors and
 * anything a person or a page sees. URLs without a password come back unchanged; in a list of brokers
 * (`amqp://u:p@h1//;amqp://u:p@h2//`) every one is masked. A password is masked whole even when it holds `@` or `;`
 * unencoded (URL parsers take the last `@` before the path, and such a URL connects), and so are credentials given
 * in the query string (`?password=…`, libpq's `sslpassword`, a `token` or `secret_key`).
 */
export function sanitizeUrl(url: string): string {
  return url
    .split(/;(?=\s*[a-z][a-z0-9+.-]*:\/\/)/i)
    .map((part) => part.replace(/^(\s*[a-z][a-z0-9+.-]*:\/\/[^:/@?#]*:)[^/?#]*@/i, '$1**@').replace(QUERY_SECRET, '$1**'))
    .join(';');
}

/** A query parameter that carries a credential, up to the next parameter. */
const QUERY_SECRET = /([?&](?:password|sslpassword|passwd|pass|secret|token|access_token|secret_key|access_key|api_key)=)[^&#]*/gi;
