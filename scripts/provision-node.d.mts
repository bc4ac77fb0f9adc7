// Types for the tests that check provision-node.mjs against src/node-support.ts.
export function pinnedVersion(line: string | number): string
export function provide(version: string): string
export function satisfies(version: string, range: string): boolean
