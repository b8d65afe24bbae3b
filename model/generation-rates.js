// The generation figures of `npm run eval:long`, from its per-block records (model/long-results.json:
// generation), computed one way for the tables it writes and for the page that quotes them.

// Characters per second over the characters (a, b] after the prompt: the blocks that end there,
// their characters over their summed times.
export function meanRate(blocks, { prompt, block }, a, b) {
  const inside = blocks.filter((x) => x.position - prompt > a && x.position - prompt <= b);
  return block * inside.length / inside.reduce((s, x) => s + block / x.charsPerSecond, 0);
}

// The position ending the first block from which `fast` beats `slow` in every block to the end,
// or null.
export function crossingPosition(fast, slow) {
  const at = fast.findIndex((_, i) => fast.slice(i).every((x, j) => !slow[i + j] || x.charsPerSecond > slow[i + j].charsPerSecond));
  return at < 0 ? null : fast[at].position;
}

// { span, first, last } with first/last: { favor, favorWindow, exact } characters per second over
// the characters span–2·span and over the last span; crossing: FAVOR+ against the exact cache.
export function generationSummary(g, span = 1024) {
  const runs = { favor: g.favor, favorWindow: g.favorWindow, exact: g.exact };
  const over = (a, b) => Object.fromEntries(Object.entries(runs).map(([k, blocks]) => [k, meanRate(blocks, g, a, b)]));
  return { span, first: over(span, 2 * span), last: over(g.characters - span, g.characters), crossing: crossingPosition(g.favor, g.exact) };
}
