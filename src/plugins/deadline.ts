// One deadline for the whole answer to a request (PETSTORE_REQUEST_DEADLINE), whatever
// it waits on: a silent database, the queue of writes behind a lost one, the guard's
// key lookup. When it passes, the request is answered 503 (the error handler tells a
// write's `outcome_unknown` from a read's `service_unavailable`) and its work goes on
// without its caller.
//
// Not Fastify's handlerTimeout: it stops its timer on the request's 'close', which
// Node emits once a body has been read, so a POST had no deadline at all.
import fp from 'fastify-plugin'

/** The error the deadline answers with; the error handler knows its code. */
const deadlinePassed = (ms: number) => Object.assign(new Error(`the request was not answered within ${ms} ms`), { code: 'FST_ERR_HANDLER_TIMEOUT', statusCode: 503 })

export default fp(
  async (app, { deadlineMs }: { deadlineMs: number }) => {
    app.addHook('onRequest', (request, reply, done) => {
      const timer = setTimeout(() => {
        if (!reply.sent && !reply.raw.headersSent) reply.send(deadlinePassed(deadlineMs))
      }, deadlineMs)
      // Answered, or the client went away: either way the timer has nothing left to do.
      reply.raw.once('close', () => clearTimeout(timer))
      done()
    })
  },
  { name: 'deadline' },
)
