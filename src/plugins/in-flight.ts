// The requests this process is answering, kept once for two users: the request
// deadline (PETSTORE_REQUEST_DEADLINE) and the request pressure the in-process
// dispatcher gives way to (webhooks/request-pressure.ts reads the counts).
//
// The deadline: one for the whole answer to a request, whatever it waits on (a silent
// database, the queue of writes behind a lost one, the guard's key lookup). When it
// passes, the request is answered 503 (the error handler tells a write's
// `outcome_unknown` from a read's `service_unavailable`) and its work goes on without
// its caller; or, when its body is still arriving, 408 `request_timeout`: nothing ran. Not Fastify's handlerTimeout: it stops its timer on the request's
// 'close', which Node emits once a body has been read, so a POST had no deadline.
//
// Cheap per request, as every request pays it: a request is added to a list when it
// arrives and taken out when answered, and one timer sweeps the list a few times a
// second, instead of a timer and a 'close' listener per request. A request is answered at most a sweep (≤ 250 ms) after its
// deadline. Fastify's own clock (reply.elapsedTime) says how long each has waited.
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import type { FastifyReply } from 'fastify'
import type { RequestCounts } from '../webhooks/request-pressure.js'

declare module 'fastify' {
  interface FastifyReply {
    /** Where the reply stands in its tracker's list while under way; -1 once answered. */
    inFlightIndex: number
  }
}

/** The requests under way; its counts are what the request pressure reads. */
export interface RequestTracker extends RequestCounts {
  arrived(reply: FastifyReply): void
  left(reply: FastifyReply): void
  /** Each reply under way (one that leaves during the walk is passed over, none twice). */
  each(visit: (reply: FastifyReply) => void): void
}

/**
 * A list of the replies under way, each knowing its place in it, so that one leaves by
 * the last taking its place: no hashing. (A Set of the replies cost the list 10 µs a
 * request in 50, measured: docs/benchmarks.md.)
 */
export function createRequestTracker(): RequestTracker {
  const replies: FastifyReply[] = []
  let started = 0
  const left = (reply: FastifyReply) => {
    const index = reply.inFlightIndex
    if (index < 0) return
    reply.inFlightIndex = -1
    const last = replies.pop()!
    if (last === reply) return
    replies[index] = last
    last.inFlightIndex = index
  }
  return {
    arrived(reply) {
      started++
      reply.inFlightIndex = replies.push(reply) - 1
    },
    left,
    started: () => started,
    inFlight: () => replies.length,
    each(visit) {
      // From the end: a reply that leaves is replaced by one already visited.
      for (let i = replies.length - 1; i >= 0; i--) {
        const reply = replies[i]
        if (reply) visit(reply)
      }
    },
  }
}

/** A request whose body had not all arrived by its deadline. */
const bodyNotArrived = (ms: number) => new ApiError('request_timeout', `The request's body did not arrive within ${ms / 1000} s; nothing was done with it. Send it again, whole.`)

/** The error the deadline answers with; the error handler knows its code. */
const deadlinePassed = (ms: number) => Object.assign(new Error(`the request was not answered within ${ms} ms`), { code: 'FST_ERR_HANDLER_TIMEOUT', statusCode: 503 })

export default fp(
  async (app, { deadlineMs, tracker }: { deadlineMs: number; tracker: RequestTracker }) => {
    // Declared on every reply from the start, so that setting it never changes a reply's shape.
    app.decorateReply('inFlightIndex', -1)
    app.addHook('onRequest', (_request, reply, done) => {
      tracker.arrived(reply)
      done()
    })
    app.addHook('onResponse', (_request, reply, done) => {
      tracker.left(reply)
      done()
    })
    const sweep = setInterval(
      () =>
        tracker.each((reply) => {
          // Answered, or the client went away (Fastify calls no onResponse for a socket destroyed first).
          if (reply.sent || reply.raw.headersSent || reply.raw.destroyed) tracker.left(reply)
          else if (reply.elapsedTime >= deadlineMs) {
            tracker.left(reply)
            // A body still arriving has reached no handler: nothing was done, and no 5xx is owed.
            reply.send(reply.request.raw.complete ? deadlinePassed(deadlineMs) : bodyNotArrived(deadlineMs))
          }
        }),
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
