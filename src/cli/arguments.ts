// The one reader of integer arguments: key ids, limits, category ids, pet ids. Ranges
// beyond "positive and exact" (limit up to 100, a plan's caps) are the API's or the
// plan's to judge, with their own messages.
import { CliError } from './cli-error.js'

export function positiveInteger(value: string, name: string, hint = ''): number {
  if (!/^[1-9][0-9]*$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new CliError(`${name} must be a positive integer${hint}, got "${value}"`)
  }
  return Number(value)
}
