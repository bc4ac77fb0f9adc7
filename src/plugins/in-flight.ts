// The requests this process is answering, kept once for two users: the request
// deadline (PETSTORE_REQUEST_DEADLINE) and the request pressure the in-process
// dispatcher gives way to (webhooks/request-pressure.ts reads the counts).
//
// The deadline: one for the whole answer to a request, whatever it waits on (a silent
// database, the queue of writes behind a lost one, the guard's key lookup). When it
// passes, the request is answered 503 (the error handler tells a write's
// `outcome_unknown` from a read's `service_unavailable`) and its work goes on without
// its caller. Not Fastify's handlerTimeout: it stops its timer on the request's
// 'close', which Node emits once a body has been read, so a POST had no deadline.
//
// Cheap per request, as every request pays it: a request is added to a set when it
// arrives and taken out when answered, and one timer sweeps the set a few times a
// second (a timer and a 'close' listener per request cost the list about 2 µs in 45,
// docs/benchmarks.md). A request is answered at most a sweep (≤ 250 ms) after its
// deadline. Fastify's own clock (reply.elapsedTime) says how long each has waited.
import fp from 'fastify-plugin'
import type { FastifyReply } from 'fastify'

/** The requests under way; its counts are what the request pressure reads (webhooks/request-pressure.ts). */
export interface RequestTracker {
  /** Requests that arrived since the process started. */
  started(): number
  /** Requests arrived and not yet answered. */
  inFlight(): number
  /** The replies under way: the plugin adds and removes them. */
  readonly replies: Set<FastifyReply>
  arrived(reply: FastifyReply): void
}

export function createRequestTracker(): RequestTracker {
  const replies = new Set<FastifyReply>()
  let started = 0
  return {
    replies,
    arrived(reply) {
      started++
      replies.add(reply)
    },
    started: () => started,
    inFlight: () => replies.size,
  }
}

/** The error the deadline answers with; the error handler knows its code. */
const deadlinePassed = (ms: number) => Object.assign(new Error(`the request was not answered within ${ms} ms`), { code: 'FST_ERR_HANDLER_TIMEOUT', statusCode: 503 })

export default fp(
  async (app, { deadlineMs, tracker }: { deadlineMs: number; tracker: RequestTracker }) => {
    const { replies } = tracker
    app.addHook('onRequest', (_request, reply, done) => {
      tracker.arrived(reply)
      done()
    })
    app.addHook('onResponse', (_request, reply, done) => {
      replies.delete(reply)
      done()
    })
    const sweep = setInterval(
      () => {
        for (const reply of replies) {
          // Answered, or the client went away (Fastify calls no onResponse for a socket destroyed first).
          if (reply.sent || reply.raw.headersSent || reply.raw.destroyed) replies.delete(reply)
          else if (reply.elapsedTime >= deadlineMs) {
            replies.delete(reply)
            reply.send(deadlinePassed(deadlineMs))
          }
        }
      },
      Math.min(250, deadlineMs / 4),
    )
    sweep.unref()
    app.addHook('onClose', (_app, done) => {
      clearInterval(sweep)
      done()
    })
  },
  { name: 'in-flight' },
)
