// The page's workers call loadFavor() themselves, so the page guards them against Firefox's
// freeze as loadFavor({ worker: true }) guards its own worker (web/load-watch.js): a worker beats
// until its module has loaded, and one heard once and then silent for silentMs is replaced.
import { heartbeat as beatUntil, watchSilence } from '../../web/load-watch.js';

export const SILENT_MS = 10_000;

// In the worker: { type: 'alive' } now and every second until `loaded` settles.
export const heartbeat = (loaded) => beatUntil(() => postMessage({ type: 'alive' }), loaded);

// On the page: call heard() for every message of the worker, loaded() once it has loaded.
// replace(n) ends the frozen worker and starts the n-th replacement; after `attempts` frozen
// workers in a row, giveUp() instead.
export function loadWatch({ replace, giveUp, silentMs = SILENT_MS, attempts = 3 }) {
  let frozen = 0;
  const watch = watchSilence(() => {
    if (++frozen < attempts) {
      replace(frozen);
    } else {
      watch.stop();
      giveUp();
    }
  }, silentMs);
  return { heard: watch.heard, loaded: watch.stop };
}
