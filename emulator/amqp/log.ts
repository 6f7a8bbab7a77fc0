// The logger shape the plane needs; pino's Logger satisfies it. Callers pass entity names, message ids and
// sizes only: never tokens, connection strings or message bodies.

export interface PlaneLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export const silentLog: PlaneLog = {
  info() {},
  warn() {},
  error() {},
  debug() {},
};
