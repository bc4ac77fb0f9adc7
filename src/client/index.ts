// `petstore/client`: a typed client for the Pet Store API. Its types come from the
// server's own schemas and error catalog (type-only imports, erased at build), so
// at run time it needs nothing but `fetch`.
import type { NewPet, Pet, PetStatus } from '../schemas/pet.js'
import { normalizeBaseUrl } from './base-url.js'
import type { RateLimitState } from './errors.js'
import { nextCursor } from './response-headers.js'
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js'
import { createTransport } from './transport.js'

export type { NewPet, Pet, PetStatus } from '../schemas/pet.js'
export type { ErrorBody, ErrorCode, ErrorDetail } from '../errors.js'
export { PetstoreError, PetstoreNetworkError, type OperationId, type PetstoreErrorCode, type RateLimitState } from './errors.js'
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js'

export interface ClientOptions extends Partial<RetryPolicy> {
  /**
   * The API's base URL, with or without the version segment:
   * `http://127.0.0.1:8080` and `https://api.petstore.example/v1` both work
   * (`/v1` is appended when missing; trailing slashes are dropped).
   */
  baseUrl: string
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string
  /** Milliseconds one request may take, the body included, before it counts as a network failure. Default 30,000. */
  timeoutMs?: number
  /** Default: the global `fetch`. */
  fetch?: typeof fetch
  /** How the client waits between attempts. Default: a timer. Tests pass one that moves a fake clock. */
  sleep?: (ms: number) => Promise<void>
  /** A number in [0, 1) for the backoff jitter. Default: Math.random. */
  random?: () => number
}

export interface ListPetsOptions {
  /** 1 to 100; the API's default is 20. */
  limit?: number
  status?: PetStatus
  /** Where the page starts: a `nextCursor` of a previous page. */
  cursor?: string
}

export interface PetPage {
  pets: Pet[]
  /** Pass it as `cursor` for the next page; undefined on the last page. */
  nextCursor: string | undefined
  rateLimit: RateLimitState | undefined
  requestId: string | undefined
}

export interface CreatePetOptions {
  /**
   * Sent as `Idempotency-Key`, the same on every retry of this call, so that a
   * retry after a lost answer gets the first answer instead of a second pet.
   * Default: a fresh random UUID per call. `false` sends none; a lost answer is
   * then not retried (the pet may exist), only refusals by the rate limit are.
   */
  idempotencyKey?: string | false
}

export interface PetstoreClient {
  /** The normalized base URL, ending in /v1. */
  readonly baseUrl: string
  /** One page of pets, in ascending id order. */
  listPets(options?: ListPetsOptions): Promise<PetPage>
  /** Every pet matching, across all pages: `for await (const pet of client.allPets({ status: 'sold' }))`. */
  allPets(options?: ListPetsOptions): AsyncGenerator<Pet, void, undefined>
  createPet(pet: NewPet, options?: CreatePetOptions): Promise<Pet>
  /**
   * @deprecated The API removes GET /pets/{petId} on 5 December 2030: use listPets
   * with the status filter. The client warns once per process when it is called.
   */
  getPet(id: number): Promise<Pet>
}

/** A client for one base URL and API key. Methods throw PetstoreError or PetstoreNetworkError. */
export function createClient(options: ClientOptions): PetstoreClient {
  const baseUrl = normalizeBaseUrl(options.baseUrl)
  const policy: RetryPolicy = {
    maxAttempts: options.maxAttempts ?? DEFAULT_RETRY_POLICY.maxAttempts,
    maxRetryAfterSeconds: options.maxRetryAfterSeconds ?? DEFAULT_RETRY_POLICY.maxRetryAfterSeconds,
    baseDelayMs: options.baseDelayMs ?? DEFAULT_RETRY_POLICY.baseDelayMs,
    maxDelayMs: options.maxDelayMs ?? DEFAULT_RETRY_POLICY.maxDelayMs,
  }
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new RangeError(`petstore client: maxAttempts must be an integer of at least 1, got ${policy.maxAttempts}`)
  }
  const send = createTransport({
    baseUrl,
    apiKey: options.apiKey,
    // Looked up per call, not captured, so that a fetch replaced later (by a test or an APM agent) is used.
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    random: options.random ?? Math.random,
    timeoutMs: options.timeoutMs ?? 30_000,
    policy,
  })

  async function listPets({ limit, status, cursor }: ListPetsOptions = {}): Promise<PetPage> {
    const query = new URLSearchParams()
    if (limit !== undefined) query.set('limit', String(limit))
    if (status !== undefined) query.set('status', status)
    if (cursor !== undefined) query.set('cursor', cursor)
    const search = query.size > 0 ? `?${query.toString()}` : ''
    const { body, headers, rateLimit, requestId } = await send({ operation: 'listPets', method: 'GET', path: `/pets${search}`, repeatable: true })
    return { pets: body as Pet[], nextCursor: nextCursor(headers.get('link')), rateLimit, requestId }
  }

  async function* allPets(listOptions: ListPetsOptions = {}): AsyncGenerator<Pet, void, undefined> {
    let cursor = listOptions.cursor
    do {
      const page = await listPets({ ...listOptions, cursor })
      yield* page.pets
      cursor = page.nextCursor
    } while (cursor !== undefined)
  }

  async function createPet(pet: NewPet, { idempotencyKey }: CreatePetOptions = {}): Promise<Pet> {
    // One key per call, generated before the first attempt, so every retry carries the same.
    const key = idempotencyKey === false ? undefined : (idempotencyKey ?? globalThis.crypto.randomUUID())
    const { body } = await send({
      operation: 'createPet',
      method: 'POST',
      path: '/pets',
      body: pet,
      headers: key === undefined ? {} : { 'idempotency-key': key },
      repeatable: key !== undefined,
    })
    return body as Pet
  }

  async function getPet(id: number): Promise<Pet> {
    const { body } = await send({ operation: 'getPet', method: 'GET', path: `/pets/${encodeURIComponent(String(id))}`, repeatable: true })
    return body as Pet
  }

  return { baseUrl, listPets, allPets, createPet, getPet }
}
