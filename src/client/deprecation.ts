// One warning per deprecated operation per process: enough to be noticed in logs,
// not so many as to flood them. The set is module state on purpose: the promise is
// "once per process", however many clients the process creates.
import type { OperationId } from './errors.js'

const warned = new Set<OperationId>()

const REPLACEMENTS: Partial<Record<OperationId, string>> = {
  getPet: 'use listPets({ ids: [id] }) instead, which answers its ETag too (etags[id])',
}

export function warnDeprecated(operation: OperationId, sunset: string | undefined): void {
  if (warned.has(operation)) return
  warned.add(operation)
  const removal = sunset ? `it will be removed on ${sunset} (Sunset header)` : 'it will be removed'
  const replacement = REPLACEMENTS[operation] ? `; ${REPLACEMENTS[operation]}` : ''
  const message = `petstore client: ${operation} is deprecated by the API: ${removal}${replacement}.`
  // Outside Node (a browser bundle) there is no process: fall back to the console.
  if (typeof process !== 'undefined' && typeof process.emitWarning === 'function') {
    process.emitWarning(message, { type: 'DeprecationWarning', code: `PETSTORE_DEPRECATED_${operation.toUpperCase()}` })
  } else {
    console.warn(message)
  }
}
