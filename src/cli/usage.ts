// `petstore usage …`: what the calling key sees of its account's use, through the typed
// client against a running service (PETSTORE_URL, PETSTORE_API_KEY): the rate-limit
// windows now, and the history as a table (or JSON).
import { printableJson } from './io.js'
import { DAY_MS } from '../usage/buckets.js'
import { DAYS_FLAG, historyDays, positiveInteger } from './arguments.js'
import { defineCommand } from './command.js'
import { usageTable } from './keys.js'
import { withClient } from './pets.js'

export const usageCommands = [
  defineCommand({
    name: 'usage now',
    summary: "The account's rate-limit windows as they stand (all its keys together)",
    flags: { json: { description: 'print the JSON the API answers' } },
    run: ({ values }, context) =>
      withClient(context, async (client) => {
        const usage = await client.getUsage()
        if (values.json) {
          context.io.out(printableJson(usage))
          return 0
        }
        const line = (name: string, window: typeof usage.minute) =>
          `${name.padEnd(8)}${String(window.used).padStart(8)} used of ${window.limit}, ${window.remaining} left, resets ${new Date(window.reset * 1000).toISOString()}`
        context.io.out([line('minute', usage.minute), line('day', usage.day), `banned  ${usage.bannedUntil === null ? 'no' : `until ${usage.bannedUntil}`}`].join('\n'))
        return 0
      }),
  }),
  defineCommand({
    name: 'usage history',
    summary: "The account's requests per day (or hour) and outcome, as a table",
    flags: {
      days: DAYS_FLAG,
      hourly: { description: 'a row per hour instead of per day' },
      'key-id': { value: 'N', description: 'one key of the account (default: all its keys together)' },
      json: { description: 'print the JSON the API answers' },
    },
    run: ({ values }, context) => {
      const days = historyDays(values.days)
      const keyId = values['key-id'] === undefined ? undefined : positiveInteger(values['key-id'], '--key-id')
      return withClient(context, async (client) => {
        const from = new Date(Date.now() - days * DAY_MS).toISOString()
        const buckets = await client.getUsageHistory({ from, granularity: values.hourly ? 'hour' : 'day', ...(keyId === undefined ? {} : { keyId }) })
        if (values.json) context.io.out(printableJson(buckets))
        else if (buckets.length === 0) context.io.out(`No requests in the last ${days} days.`)
        else context.io.out(usageTable(buckets, values.hourly))
        return 0
      })
    },
  }),
]
