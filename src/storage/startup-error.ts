// A refusal to start because of the data directory's state (locked by another process, damaged
// store). The CLI prints the message on stderr and exits with `exitCode` (2, like a flag error:
// the operator must act; a supervisor restarting the process in a loop will not help).
export class StartupRefusedError extends Error {
  readonly exitCode = 2;
}
