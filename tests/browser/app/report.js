// Writes what a scenario page found into #result (JSON and data-status="ok", or the error with
// data-status="error"), where the tests read it.
export function report(promise) {
  const out = document.getElementById('result');
  promise.then(
    (result) => {
      out.textContent = JSON.stringify(result);
      out.dataset.status = 'ok';
    },
    (error) => {
      out.textContent = String(error?.stack ?? error);
      out.dataset.status = 'error';
    },
  );
}
