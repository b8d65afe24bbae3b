// Entry of the test app: `favor-attention` is resolved by Vite (dev and build) or by the
// import map of plain.html. Writes the results as JSON into #result.
import { loadFavor, version } from 'favor-attention';
import { runDemo } from './demo.js';
import { report } from './report.js';

report(runDemo(loadFavor).then((result) => ({ ...result, exportedVersion: version })));
