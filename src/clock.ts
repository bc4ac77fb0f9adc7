// Time is a dependency: tests move it to cross rate-limit windows and the Sunset date.

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock that only moves when told to: for tests. */
export function createManualClock(start: number | string | Date = Date.now()): Clock & {
  set(time: number | string | Date): void
  advance(ms: number): void
} {
  let current = new Date(start).getTime()
  return {
    now: () => current,
    set: (time) => {
      current = new Date(time).getTime()
    },
    advance: (ms) => {
      current += ms
    },
  }
}
