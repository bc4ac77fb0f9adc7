/// <reference types="vite/client" />

// The typed client runs in Node and in browsers: src/client/deprecation.ts uses
// Node's `process` only after checking that it exists. The console is type-checked
// with the DOM's globals alone, so it declares that much of it.
declare const process: { emitWarning(message: string, options: { type: string; code: string }): void } | undefined
