// The scripted load of the adoption workflow (decision D10), where each request
// differs from the last: `order` reserves a different pet with every request, and
// `mixed` lists pets but for one request in ten, which reserves, completes or
// cancels an order. Written once per generator: a Lua script for wrk, a requests
// array for autocannon (bench/autocannon-scenario.ts).

export const ORDERS_PATH = '/v1/store/orders'

export type Scenario =
  /** POST /v1/store/orders for pets firstPetId, firstPetId + 1, …: all available, never reserved before. */
  | { kind: 'order'; firstPetId: number }
  /**
   * Nine requests in ten GET listPath; the tenth alternately reserves the next pet
   * from firstPetId on, and closes an order it placed: completes it one time,
   * cancels it the next. So half the writes reserve, a quarter complete, a quarter cancel.
   */
  | { kind: 'mixed'; firstPetId: number; listPath: string }

/** What a scripted run counted beside the generator's totals. */
export interface ScenarioCounts {
  /** Pets of the pool used up: reservations sent, whatever their answer. */
  reserved: number
  /** 2xx answers to the list requests of a mixed run. */
  listed: number
}

const closePath = (orderId: number | string, action: 'complete' | 'cancel') => `${ORDERS_PATH}/${orderId}/${action}`

// ---------------------------------------------------------------------------
// wrk: the harness runs it with one thread (-t1), so one Lua state sends every
// request and sees every response; done() runs in the main state and reads the
// thread's counters with thread:get.

const lua = (value: string) => JSON.stringify(value) // a JSON string literal is a valid Lua one for ASCII

function luaTable(headers: Record<string, string>): string {
  return `{ ${Object.entries(headers)
    .map(([name, value]) => `[${lua(name)}] = ${lua(value)}`)
    .join(', ')} }`
}

/**
 * The request and response hooks of a scenario, plus `scenario_counts()` for the
 * done hook. `headers` are sent on every request; a reservation adds its JSON
 * Content-Type, a close (no body) sends none, as the typed client does.
 */
export function wrkScript(scenario: Scenario, headers: Record<string, string>): string {
  const common = `
reserved = 0
listed = 0
local next_pet = ${scenario.firstPetId}
local plain = ${luaTable(headers)}
local json = ${luaTable({ ...headers, 'content-type': 'application/json' })}
local function reserve()
  local body = '{"petId":' .. next_pet .. '}'
  next_pet = next_pet + 1
  reserved = reserved + 1
  return wrk.format('POST', ${lua(ORDERS_PATH)}, json, body)
end

local threads = {}
setup = function(thread) table.insert(threads, thread) end
function scenario_counts()
  local r, l = 0, 0
  for _, thread in ipairs(threads) do
    r = r + thread:get('reserved')
    l = l + thread:get('listed')
  end
  return r, l
end
`
  if (scenario.kind === 'order') return `${common}\nrequest = reserve\n`
  return `${common}
local n = 0
local writes = 0
local closes = 0
local open = {}
request = function()
  n = n + 1
  if n % 10 ~= 0 then return wrk.format('GET', ${lua(scenario.listPath)}, plain) end
  writes = writes + 1
  if writes % 2 == 1 or #open == 0 then return reserve() end
  closes = closes + 1
  local action = closes % 2 == 1 and 'complete' or 'cancel'
  return wrk.format('POST', ${lua(ORDERS_PATH)} .. '/' .. table.remove(open) .. '/' .. action, plain)
end
response = function(status, headers, body)
  if status == 200 and body:sub(1, 1) == '[' then
    listed = listed + 1
  elseif status == 201 then
    -- A reservation's answer: the order to complete or cancel later.
    local id = body:match('"id":(%d+)')
    if id then table.insert(open, id) end
  end
end
`
}

// ---------------------------------------------------------------------------
// autocannon: each connection walks the requests array in turn, with a context of
// its own that is reset at the start of each walk, so each reservation is closed
// within the same walk of 40 requests.

/** The parts of autocannon's request objects that the scenarios set. */
export interface CannonRequest {
  method: 'GET' | 'POST'
  path: string
  headers: Record<string, string>
  body?: string | undefined
}

export interface CannonStep {
  method: 'GET' | 'POST'
  path: string
  headers: Record<string, string>
  setupRequest?: (request: CannonRequest, context: Record<string, unknown>) => CannonRequest
  onResponse?: (status: number, body: string, context: Record<string, unknown>) => void
}

/** The requests array of a scenario, counting into `counts` as it runs. */
export function cannonSteps(scenario: Scenario, headers: Record<string, string>, counts: ScenarioCounts): CannonStep[] {
  let nextPet = scenario.firstPetId
  const json = { ...headers, 'content-type': 'application/json' }
  const reserve: CannonStep = {
    method: 'POST',
    path: ORDERS_PATH,
    headers: json,
    setupRequest: (request) => {
      counts.reserved++
      return { ...request, headers: json, body: JSON.stringify({ petId: nextPet++ }) }
    },
    onResponse: (status, body, context) => {
      if (status === 201) context.order = (JSON.parse(body) as { id: number }).id
    },
  }
  if (scenario.kind === 'order') return [reserve]

  const list: CannonStep = {
    method: 'GET',
    path: scenario.listPath,
    headers,
    onResponse: (status) => {
      if (status === 200) counts.listed++
    },
  }
  const close = (action: 'complete' | 'cancel'): CannonStep => ({
    method: 'POST',
    path: ORDERS_PATH,
    headers,
    setupRequest: (request, context) => {
      const order = context.order as number | undefined
      context.order = undefined
      context.listing = order === undefined
      // The reservation failed: nothing to close, so this turn lists like the others.
      if (order === undefined) return { ...request, method: 'GET', path: scenario.listPath, headers, body: undefined }
      return { ...request, method: 'POST', path: closePath(order, action), headers, body: undefined }
    },
    onResponse: (status, _body, context) => {
      if (context.listing && status === 200) counts.listed++
    },
  })
  const lists = Array.from({ length: 9 }, () => list)
  return [...lists, reserve, ...lists, close('complete'), ...lists, reserve, ...lists, close('cancel')]
}
