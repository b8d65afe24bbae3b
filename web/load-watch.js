// Firefox (153 ESR; here, under CPU load, 1 load in 25-80) can block a worker for good in the
// synchronous `new Worker()` that starts a pthread of the threaded build, when that worker is
// itself a worker's; no timer of the blocked worker fires again, so only its parent can tell.
// A worker that loads favor-attention beats (heartbeat) until the load settles; its parent
// watches (watchSilence) and replaces one heard once and then silent. Silence before the first
// beat is not a freeze: the worker's script may still be downloading.
// Used by loadFavor({ worker: true }) (worker-client.js, worker-host.js) and the demo's workers.

// In the worker: beat() now and every second until `loaded` settles.
export function heartbeat(beat, loaded) {
  beat();
  const timer = setInterval(beat, 1000);
  const stop = () => clearInterval(timer);
  loaded.then(stop, stop);
}

// In the parent: call heard() for every message of the worker, stop() once it has loaded.
// onSilent() runs when the worker was heard and then silent for silentMs (then the watch waits
// for the next heard()).
export function watchSilence(onSilent, silentMs) {
  let heard = 0;
  const timer = setInterval(() => {
    if (!heard || Date.now() - heard < silentMs) return;
    heard = 0;
    onSilent();
  }, Math.min(1000, silentMs / 4));
  timer.unref?.();  // Node: what is being loaded keeps the process alive, not this check
  return { heard: () => { heard = Date.now(); }, stop: () => clearInterval(timer) };
}
