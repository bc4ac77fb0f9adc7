// "Did you mean": the CLI's unknown commands and options, and the API's unknown query
// parameters, suggest the name most likely meant.

/** The candidate a mistyped word most likely meant: at most two edits away, and fewer than half its letters. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined
  let bestDistance = Math.min(2, Math.floor(word.length / 2))
  for (const candidate of candidates) {
    const distance = editDistance(word, candidate)
    if (distance <= bestDistance && (best === undefined || distance < bestDistance)) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

/** Levenshtein distance, with a transposition counted as one edit ("--lmiit"). */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let value = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, rows[i - 2]![j - 2]! + 1)
      rows[i]![j] = value
    }
  }
  return rows[a.length]![b.length]!
}
