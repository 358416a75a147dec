// What the auth modules need from their host: only a logger (pino's and console's shapes both fit).
export interface AuthLogger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export interface AuthDeps {
  logger?: AuthLogger;
  /** The clock cache TTLs are measured on (default Date.now); tests pass a manual one. */
  now?: () => number;
}

const consoleLogger: AuthLogger = {
  info: (m) => console.log(m),
  warn: (m) => console.warn(m),
  error: (m) => console.error(m),
};

export function loggerOf(deps: AuthDeps | undefined): AuthLogger {
  return deps?.logger ?? consoleLogger;
}
