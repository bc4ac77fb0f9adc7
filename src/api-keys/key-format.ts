// API key format: `ps_<env>_` + 30 random base62 characters (178 bits) + a
// 6-character CRC32 checksum, as GitHub's tokens carry one. The readable prefix
// lets secret scanners recognise our keys; the checksum refuses a mistyped or
// made-up key without a store lookup. Only the SHA-256 of a key is ever stored.
import { createHash, randomInt } from 'node:crypto'
import { crc32 } from 'node:zlib'
import type { Environment } from '../config.js'

export type KeyEnvironment = 'live' | 'test'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const RANDOM_LENGTH = 30
const CHECKSUM_LENGTH = 6
const KEY_PATTERN = /^ps_(live|test)_([0-9A-Za-z]{30})([0-9A-Za-z]{6})$/

/** Production serves live keys; staging and development serve test keys. */
export function keyEnvironmentFor(environment: Environment): KeyEnvironment {
  return environment === 'production' ? 'live' : 'test'
}

export function generateApiKey(environment: KeyEnvironment): string {
  let random = ''
  for (let i = 0; i < RANDOM_LENGTH; i++) random += BASE62[randomInt(62)]
  const body = `ps_${environment}_${random}`
  return body + checksum(body)
}

export type ParsedKey = { ok: true; environment: KeyEnvironment } | { ok: false }

/** Checks the shape and checksum of a key; says nothing about whether it exists. */
export function parseApiKey(key: string): ParsedKey {
  const match = KEY_PATTERN.exec(key)
  if (!match) return { ok: false }
  const [, environment, random, sum] = match
  if (checksum(`ps_${environment}_${random}`) !== sum) return { ok: false }
  return { ok: true, environment: environment as KeyEnvironment }
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex')
}

/** The non-secret start of a key (`ps_test_AbCd`), to recognise it in listings. */
export function displayPrefix(key: string): string {
  return key.slice(0, 'ps_test_'.length + 4)
}

function checksum(text: string): string {
  let n = crc32(text)
  let out = ''
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62] + out
    n = Math.floor(n / 62)
  }
  return out
}
