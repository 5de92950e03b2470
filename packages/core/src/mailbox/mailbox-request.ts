/** The body of a remote-control request, exactly as Kombu's pidbox writes it (docs/wire.md#remote-control-pidbox). */
export interface MailboxRequest {
  method: string;
  arguments: Record<string, unknown>;
  destination: string[] | null;
  pattern: string | null;
  matcher: string | null;
  ticket?: string;
  reply_to?: { exchange: string; routing_key: string };
}
