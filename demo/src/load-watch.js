// Firefox can block a worker for good in the synchronous `new Worker()` with which the threaded
// favor-attention build starts its pthreads (here, under CPU load, 1 start in 25-80;
// Firefox 153 ESR); no timer of that worker fires again. loadFavor({ worker: true }) guards its
// own worker (web/worker-client.js). The page's workers call loadFavor() themselves, so the page
// watches them the same way: a worker beats (heartbeat) until its module has loaded, and one
// heard once and then silent for silentMs is replaced. Silence before the first beat is not a
// freeze: the worker's script may still be downloading.

export const SILENT_MS = 10_000;

// In the worker: beats now and every second until `loaded` settles.
export function heartbeat(loaded) {
  const beat = () => postMessage({ type: 'alive' });
  beat();
  const timer = setInterval(beat, 1000);
  const stop = () => clearInterval(timer);
  loaded.then(stop, stop);
}

// On the page: call heard() for every message of the worker, loaded() once it has loaded.
// replace(n) ends the frozen worker and starts the n-th replacement; after `attempts` frozen
// workers in a row, giveUp() instead.
export function loadWatch({ replace, giveUp, silentMs = SILENT_MS, attempts = 3 }) {
  let heard = 0, frozen = 0;
  const timer = setInterval(() => {
    if (!heard || Date.now() - heard < silentMs) return;
    heard = 0;
    if (++frozen < attempts) {
      replace(frozen);
    } else {
      clearInterval(timer);
      giveUp();
    }
  }, Math.min(1000, silentMs / 4));
  return {
    heard: () => { heard = Date.now(); },
    loaded: () => clearInterval(timer),
  };
}
