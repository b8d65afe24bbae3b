// Sections of BENCHMARKS.md written by their own scripts (bench/decode.mjs, bench/worker.mjs, bench/threads.mjs, bench/threads-browser.mjs, bench/work-span.mjs, bench/feature-maps.mjs,
// bench/node-peers.mjs, bench/browser-peers.mjs) between <!-- name --> and <!-- /name --> markers, so that each script,
// and a rewrite of the main report (bench/run.mjs --report-only), leaves the others in place.
// 'reading' (how to read the figures) is written by hand: no script writes it, every one keeps it.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SECTION_NAMES = ['decode', 'window', 'worker', 'packed', 'feature-maps', 'threads', 'threads-browser', 'threads-firefox', 'work-span', 'node', 'browser', 'firefox', 'reading'];
const marked = (name) => new RegExp(`<!-- ${name} -->[\\s\\S]*<!-- /${name} -->`);

const COMMITTED = fileURLToPath(new URL('../../BENCHMARKS.md', import.meta.url));

// Whether `file` is the repository's BENCHMARKS.md, whose results files (bench/*.json, plots) are
// committed with it: a report written anywhere else leaves them as they are.
export const isCommittedReport = (file) => resolve(String(file)) === COMMITTED;

// Where the results file (or folder: plots) `name` of `report` goes: bench/ beside this module
// for the committed BENCHMARKS.md (also when `report` is undefined: no --out), the report's own
// folder for any other.
export const resultsFileFor = (report, name) =>
  (report === undefined || isCommittedReport(report) ? fileURLToPath(new URL(`../${name}`, import.meta.url)) : join(dirname(resolve(String(report))), name));

// Replaces section `name` of `file` with `text` (which carries its markers), or appends it.
// (A replacer function: a replacement string would read '$&', '$`' and "$'" in the text as patterns.)
export function writeSection(file, name, text) {
  const old = existsSync(file) ? readFileSync(file, 'utf8').trimEnd() : '';
  writeFileSync(file, marked(name).test(old) ? `${old.replace(marked(name), () => text)}\n` : `${old ? `${old}\n\n` : ''}${text}\n`);
}

// Every section of `file` (with its markers) in the order the file has them, to put back after the
// file is rewritten.
export function readSections(file) {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  return SECTION_NAMES.map((name) => [name, text.match(marked(name))]).filter(([, match]) => match)
    .sort(([, a], [, b]) => a.index - b.index).map(([name, match]) => [name, match[0]]);
}
