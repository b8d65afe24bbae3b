// A wasmUrl that answers 404: loadFavor must reject (within a few seconds), not hang.
import { loadFavor } from 'favor-attention';

const out = document.getElementById('result');
const timeout = new Promise((resolve) => setTimeout(() => resolve('still pending after 10 s'), 10_000));
const load = loadFavor({ wasmUrl: new URL('./does-not-exist.wasm', import.meta.url) }).then(
  () => 'resolved',
  (error) => `rejected: ${error?.message ?? error}`,
);
Promise.race([load, timeout]).then((outcome) => {
  out.textContent = JSON.stringify({ outcome });
  out.dataset.status = 'ok';
});
