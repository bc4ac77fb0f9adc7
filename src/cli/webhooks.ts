// `petstore webhooks …` and `petstore events …`: webhook endpoints and the events they
// are sent, through the typed client against a running service (PETSTORE_URL,
// PETSTORE_API_KEY), as the pets commands are. JSON on stdout; notes on stderr.
import { printableJson } from './io.js'
import type { PetstoreClient, WebhookEvent } from '../client/index.js'
import { EVENT_TYPES, TEST_EVENT } from '../vocabulary/event-types.js'
import { idempotencyKeyFlag, idempotencyOption, positiveInteger } from './arguments.js'
import { CliError } from './cli-error.js'
import { defineCommand, type Context } from './command.js'
import { listCommand, listFlags, oneOf } from './list-command.js'
import { withClient } from './pets.js'

const EVENT_LIST = `* (all) or a comma list of ${EVENT_TYPES.join(', ')}`

/** `--events` as the API takes it: `*`, or event types. */
function enabledEvents(text: string): string[] {
  return text.split(',').map((type) => oneOf(type.trim(), ['*', ...EVENT_TYPES], '--events'))
}

const print = (context: Context, value: unknown) => context.io.out(printableJson(value))
const endpointId = (raw: string) => positiveInteger(raw, 'ID')

/** One endpoint command: `run` gets the client and the endpoint's id. */
const onEndpoint = (context: Context, raw: string, run: (client: PetstoreClient, id: number) => Promise<unknown>) =>
  withClient(context, async (client) => {
    print(context, await run(client, endpointId(raw)))
    return 0
  })

export const webhooksCommands = [
  defineCommand({
    name: 'webhooks create',
    summary: 'Add a webhook endpoint; prints it as JSON with its signing secret, shown this once',
    flags: {
      url: { value: 'URL', description: 'where to POST deliveries (https, a public address)', required: true },
      events: { value: 'TYPES', description: EVENT_LIST, required: true },
      description: { value: 'TEXT', description: 'a note for people' },
      'idempotency-key': idempotencyKeyFlag('the first endpoint, its secret included, not a second one'),
    },
    run: ({ values }, context) =>
      withClient(context, async (client) => {
        const endpoint = await client.createWebhookEndpoint(
          {
            url: values.url,
            enabledEvents: enabledEvents(values.events),
            ...(values.description === undefined ? {} : { description: values.description }),
          },
          idempotencyOption(values['idempotency-key']),
        )
        print(context, endpoint)
        context.io.err('petstore: the secret is shown this once: give it to the receiver (its WEBHOOK_SECRET)')
        return 0
      }),
  }),
  defineCommand({
    name: 'webhooks list',
    summary: "The account's webhook endpoints as JSON",
    run: (_input, context) =>
      withClient(context, async (client) => {
        print(context, await client.listWebhookEndpoints())
        return 0
      }),
  }),
  defineCommand({ name: 'webhooks show', args: ['ID'], summary: 'Print one webhook endpoint as JSON', run: ({ args: [id] }, context) => onEndpoint(context, id, (client, n) => client.getWebhookEndpoint(n)) }),
  defineCommand({
    name: 'webhooks update',
    args: ['ID'],
    summary: 'Change an endpoint (at least one change); prints it as JSON',
    flags: {
      url: { value: 'URL', description: 'a new address' },
      events: { value: 'TYPES', description: EVENT_LIST },
      description: { value: 'TEXT', description: 'a new note' },
      enable: { description: 'start deliveries again (and forget past failures)' },
      disable: { description: 'stop deliveries' },
    },
    run: ({ values, args: [id] }, context) => {
      if (values.enable && values.disable) throw new CliError('--enable and --disable cannot be given together')
      const changes = {
        ...(values.url === undefined ? {} : { url: values.url }),
        ...(values.events === undefined ? {} : { enabledEvents: enabledEvents(values.events) }),
        ...(values.description === undefined ? {} : { description: values.description }),
        ...(values.enable ? { enabled: true } : values.disable ? { enabled: false } : {}),
      }
      if (Object.keys(changes).length === 0) throw new CliError('webhooks update needs at least one of --url, --events, --description, --enable or --disable')
      return onEndpoint(context, id, (client, n) => client.updateWebhookEndpoint(n, changes))
    },
  }),
  defineCommand({
    name: 'webhooks delete',
    args: ['ID'],
    summary: 'Delete a webhook endpoint',
    run: ({ args: [id] }, context) =>
      withClient(context, async (client) => {
        await client.deleteWebhookEndpoint(endpointId(id))
        context.io.err(`webhook endpoint ${id} deleted`)
        return 0
      }),
  }),
  defineCommand({
    name: 'webhooks rotate-secret',
    args: ['ID'],
    summary: 'Give an endpoint a new signing secret; prints it with the secret, shown this once',
    flags: { grace: { value: 'SECONDS', description: 'how long the old secret keeps signing beside the new one (default 86400, at most 604800; 0: not at all)' } },
    run: ({ values, args: [id] }, context) => {
      const grace = values.grace === undefined ? undefined : values.grace === '0' ? 0 : positiveInteger(values.grace, '--grace')
      return onEndpoint(context, id, (client, n) => client.rotateWebhookSecret(n, grace === undefined ? {} : { graceSeconds: grace }))
    },
  }),
  defineCommand({
    name: 'webhooks test',
    args: ['ID'],
    summary: `Send the endpoint a ${TEST_EVENT} event now; prints the event`,
    run: ({ args: [id] }, context) => onEndpoint(context, id, (client, n) => client.testWebhookEndpoint(n)),
  }),
  defineCommand({
    name: 'webhooks deliveries',
    args: ['ID'],
    summary: "Print an endpoint's delivery attempts as JSON",
    run: ({ args: [id] }, context) => onEndpoint(context, id, (client, n) => client.listWebhookDeliveries(n)),
  }),
]

const { limit, cursor, all } = listFlags('')

export const eventsCommands = [
  defineCommand({
    name: 'events list',
    summary: "Events the account may see, newest first, as JSON (the next page's cursor on stderr)",
    flags: { type: { value: 'TYPE', description: `only this type: ${[...EVENT_TYPES, TEST_EVENT].join(', ')}` }, limit, cursor, all },
    run: ({ values }, context) => {
      const type = values.type === undefined ? undefined : oneOf(values.type, [...EVENT_TYPES, TEST_EVENT], '--type')
      return withClient(context, (client) => {
        const page = async (options: { limit: number | undefined; cursor: string | undefined }) => {
          const { items, nextCursor } = await client.listEvents({ ...definedOnly(options), ...(type === undefined ? {} : { type }) })
          return { items, nextCursor }
        }
        return listCommand({ limit: values.limit, cursor: values.cursor, all: values.all, status: undefined }, context.io, {
          noun: 'events',
          statuses: [],
          page,
          all: async function* (options): AsyncGenerator<WebhookEvent, void, undefined> {
            let next = options.cursor
            do {
              const { items, nextCursor } = await page({ ...options, cursor: next })
              yield* items
              next = nextCursor
            } while (next !== undefined)
          },
        })
      })
    },
  }),
  defineCommand({
    name: 'events redeliver',
    args: ['EVENT_ID'],
    summary: "Send an event again to the account's endpoints subscribed to it (evt_…)",
    run: ({ args: [eventId] }, context) => {
      if (!/^evt_[0-9]{1,16}$/.test(eventId)) throw new CliError(`EVENT_ID must be an event id such as evt_42, got "${eventId}"`)
      return withClient(context, async (client) => {
        const { deliveries } = await client.redeliverEvent(eventId)
        context.io.err(`event ${eventId} queued for ${deliveries} endpoint${deliveries === 1 ? '' : 's'}`)
        return 0
      })
    },
  }),
]

/** The options given, without those left undefined (exactOptionalPropertyTypes-proof). */
function definedOnly<T extends object>(options: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> }
}
