// The private PostgreSQL server lives in @kq/test-harness, which the TLS tests share; the fault suite uses it as is.
export { PostgresNode } from '@kq/test-harness/postgres-node';
