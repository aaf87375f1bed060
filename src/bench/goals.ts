// The goals a benchmark holds its ratios to, judged by one rule: a run cut short (a signal, a
// server lost mid-run) judges none. Its figures are those of the rounds that finished: fewer,
// perhaps of some contenders only, and a verdict from them would read as the benchmark's.

/** What a goal of a run cut short says instead of met or not met. */
export const notJudged = 'not judged, the run was cut short';

/** The verdict for the JSON: whether the goal was met, null when the run was cut short. */
export function judged(met: boolean, cutShort: boolean): boolean | null {
  return cutShort ? null : met;
}

/** The verdict in words ('met' / 'not met', or the bench's own), notJudged for a run cut short. */
export function verdictText(met: boolean | null, cutShort: boolean, words: { met: string; notMet: string } = { met: 'met', notMet: 'not met' }): string {
  if (cutShort || met === null) return notJudged;
  return met ? words.met : words.notMet;
}
