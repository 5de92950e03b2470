import type { FastifyRequest } from 'fastify';

/** A request's field as tornado's `get_argument` reads it: the query string, then a form or JSON body. */
export function field(request: FastifyRequest, name: string): string | undefined {
  const query = request.query as Record<string, unknown> | undefined;
  const body = request.body as Record<string, unknown> | undefined;
  const value = query?.[name] ?? (body && typeof body === 'object' && !Array.isArray(body) ? body[name] : undefined);
  return value === undefined || value === null ? undefined : String(value);
}

/** A numeric field; undefined when absent, NaN when not a number (the caller answers 400). */
export function numberField(request: FastifyRequest, name: string): number | undefined {
  const value = field(request, name);
  return value === undefined || value === '' ? undefined : Number(value);
}

/** Tornado's boolean argument: any non-empty value but `false`/`0` is true. */
export function booleanField(request: FastifyRequest, name: string): boolean {
  const value = field(request, name);
  return value !== undefined && value !== '' && !/^(false|0|no)$/i.test(value);
}
