// The version of the model test's generators that new searches draw with. A seed stands for
// the sequence its version's generators draw from it: regressions.ts names each seed's version
// and replays it with that one, drawn exactly as it was (commands.ts, run.ts keep every version).
export const latestGen = 4;
