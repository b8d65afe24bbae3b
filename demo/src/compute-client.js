// The page's side of the compute worker (compute-worker.js): one computation in flight and at
// most one waiting (a newer request replaces the waiting one, so a dragged slider computes its
// latest value, not every value it passed), a worker that stops answering while it loads
// replaced, and each of the worker's messages handed to its handler by type.
import { loadWatch } from './load-watch.js';

export class ComputeClient {
  // handlers: { ready(msg), fatal(msg), progress(msg), manifest(msg), long(msg), generated(msg),
  // settled(msg, request) for the answer to a request ('result' or 'error'), busy(on) when
  // computations start waiting or are all done, restarted(n), gaveUp() }. silentMs: how long a
  // worker heard once may then be silent while it loads (load-watch.js).
  constructor(handlers, { silentMs } = {}) {
    this.handlers = handlers;
    this.lastId = 0;
    this.inFlight = null;
    this.pending = null;
    this.worker = this.#start();
    this.load = loadWatch({
      silentMs,
      replace: (n) => {
        this.worker.terminate();
        this.worker = this.#start();
        handlers.restarted(n);
        if (this.inFlight) this.#send(this.inFlight);
      },
      giveUp: () => {
        this.worker.terminate();
        handlers.gaveUp();
      },
    });
  }

  #start() {
    const worker = new Worker(new URL('./compute-worker.js', import.meta.url), { type: 'module' });
    worker.onmessage = (event) => this.#receive(event.data);
    worker.onerror = (e) => this.handlers.fatal({ message: `the compute worker failed: ${e.message ?? e}` });
    return worker;
  }

  // No computation in flight or waiting.
  get idle() { return !this.inFlight && !this.pending; }

  nextId() { return ++this.lastId; }

  // Computes `params`; t0 is when the change that asked for it happened (the latency counts from
  // the oldest change not yet served).
  request(params, t0) {
    const req = { id: this.nextId(), params, t0 };
    this.handlers.busy(true);
    if (this.inFlight) {
      req.t0 = Math.min(t0, this.pending?.t0 ?? Infinity);
      this.pending = req;
      return;
    }
    this.#send(req);
  }

  // A message that is not a computation of the matrices (generation, the long-text view).
  post(message) { this.worker.postMessage(message); }

  #send(req) {
    this.inFlight = req;
    req.sent = performance.now();
    this.worker.postMessage({ id: req.id, params: req.params });
  }

  #receive(msg) {
    const h = this.handlers;
    this.load.heard();
    switch (msg.type) {
      case 'alive': return;
      case 'ready': this.load.loaded(); return h.ready(msg);
      case 'fatal': this.load.loaded(); return h.fatal(msg);
      case 'progress': return h.progress(msg);
      case 'manifest': return h.manifest(msg);
      case 'long-start': case 'long-block': case 'long-done': return h.long(msg);
      case 'generated': return h.generated(msg);
      default: break;  // 'result' or 'error': the answer to the request in flight
    }
    const req = this.inFlight;
    this.inFlight = null;
    h.settled(msg, req);
    if (this.pending) {
      const next = this.pending;
      this.pending = null;
      this.#send(next);
    } else {
      h.busy(false);
    }
  }
}
