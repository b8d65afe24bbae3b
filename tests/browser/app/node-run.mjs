// The same computation in Node, through the installed package's `node` export.
import { loadFavor } from 'favor-attention';
import { runDemo } from './demo.js';

process.stdout.write(JSON.stringify(await runDemo(loadFavor)));
