/** A mistake in the command line: reported on one line, exit code 2. */
export class CliError extends Error {
  override name = 'CliError'
}

/** A command that ran and met a failure (there is no such key): one line, exit code 1. */
export class CommandFailed extends Error {
  override name = 'CommandFailed'
}
