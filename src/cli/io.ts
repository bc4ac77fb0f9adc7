// Where a command writes: stdout and stderr, a line at a time. Tests pass their own.
export interface Io {
  out: (line: string) => void
  err: (line: string) => void
}

export const consoleIo: Io = { out: (line) => console.log(line), err: (line) => console.error(line) }
