// The script of loadFavor({ worker: true }) in Node: a worker_threads worker that loads
// favor-attention and answers the calls of web/worker-client.js.
import { parentPort } from 'node:worker_threads';

import { loadFavor } from './node.js';
import { serve } from './worker-host.js';

parentPort.on('message', serve(parentPort, loadFavor));
