// Entry of the test app: `favor-attention` is resolved by Vite (dev and build) or by the
// import map of plain.html. Writes the results as JSON into #result.
import { loadFavor, version } from 'favor-attention';
import { runDemo } from './demo.js';

const out = document.getElementById('result');
runDemo(loadFavor).then(
  (result) => {
    out.textContent = JSON.stringify({ ...result, exportedVersion: version });
    out.dataset.status = 'ok';
  },
  (error) => {
    out.textContent = String(error?.stack ?? error);
    out.dataset.status = 'error';
  },
);
