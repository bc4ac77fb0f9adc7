/** A mistake in the command line: reported on one line, exit code 2. */
export class CliError extends Error {
  override name = 'CliError'
}
