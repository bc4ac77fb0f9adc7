// The console's build: `npm run build` runs it after tsc, into dist/console/, which
// src/plugins/console.ts serves at /console. Every asset is named after its content
// (Vite's default [name]-[hash]), so the server can let browsers keep them for a year.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  // Preact's automatic JSX runtime (tsconfig.json says the same for the type checker).
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console/', import.meta.url)),
    emptyOutDir: true,
    // The CSP allows no inline script: keep Vite's module-preload polyfill out of the page.
    modulePreload: { polyfill: false },
    // No data: URIs for small assets either; img-src allows them, but files are simpler to cache.
    assetsInlineLimit: 0,
    target: 'es2022',
    reportCompressedSize: false,
  },
})
