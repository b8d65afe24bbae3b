// The script of loadFavor({ worker: true }) in browsers: a module Web Worker that loads
// favor-attention and answers the calls of web/worker-client.js.
import { loadFavor } from './browser.js';
import { serve } from './worker-host.js';

const onMessage = serve(self, loadFavor);
self.onmessage = (event) => onMessage(event.data);
