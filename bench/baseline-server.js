// The baseline: a bare node:http server answering every request with one captured
// response of the real service, byte for byte (status, headers, body). It is the
// practical ceiling for one Node process on this machine.
// Usage: node bench/baseline-server.js RESPONSE.json PORT
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'

const [file, port] = process.argv.slice(2)
const { status, headers, body } = JSON.parse(readFileSync(file, 'utf8'))
const bytes = Buffer.from(body, 'base64')

// `headers` is a flat [name, value, …] list in the service's order and case;
// node:http adds Date, Connection and Keep-Alive itself, as it does for Fastify.
createServer((request, response) => {
  request.resume() // a GET has no body; drain anything sent anyway, to keep the connection usable
  response.writeHead(status, headers)
  response.end(bytes)
}).listen(Number(port), '127.0.0.1')

process.on('SIGTERM', () => process.exit(0))
