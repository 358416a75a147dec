// Defaults of the audit listener, apart from the listener itself so that flag parsing does not load
// fastify (src/cli/main.ts keeps `--help` and `version` fast).
export const AUDIT_PATH = '/audit-webhook';
export const DEFAULT_AUDIT_PORT = 9444;
export const DEFAULT_AUDIT_MAX_REQUEST_BYTES = 10 * 1024 * 1024;
/** Connections the audit listener holds at once; kube-apiserver needs a handful per replica. */
export const AUDIT_MAX_CONNECTIONS = 256;
