// The errors a call throws for a misuse: a TypeError or RangeError whose message starts with the
// call and then names the argument ("exactAttention: k: expected ..."), wherever the check was
// made: in JS (validate.js, out.js, the loaders) or in the core (its error values, coreError).
// The checks name only the argument; namedCall adds the call's name to the errors they make.
// An error they did not make (a getter of the caller's that throws) passes through untouched.
const ours = new WeakSet();
const ERROR_TYPES = { TypeError, RangeError };

function made(Type, message, factory) {
  const error = new Type(message);
  Error.captureStackTrace?.(error, factory);  // the stack starts where the check threw
  ours.add(error);
  return error;
}

/** A TypeError of this package's checks (namedCall prefixes it with the call). */
export const typeError = (message) => made(TypeError, message, typeError);
/** A RangeError of this package's checks (namedCall prefixes it with the call). */
export const rangeError = (message) => made(RangeError, message, rangeError);

/** The core's error value { error, message } as the Error it names, its message prefixed by fnName. */
export const coreError = (fnName, e) => {
  const Type = ERROR_TYPES[e.error];
  return Type ? made(Type, `${fnName}: ${e.message}`, coreError) : new Error(`${fnName}: ${e.message}`);
};

// The error `e` of call fnName, its message prefixed once. (V8 formats a stack on first read,
// so its first line reads the new message.)
function named(fnName, e) {
  if (ours.has(e) && !e.message.startsWith(`${fnName}: `)) e.message = `${fnName}: ${e.message}`;
  return e;
}

/**
 * fn as the call fnName: the errors of this package's checks it throws name the call first, and
 * so do those of the Promise it returns (loadFavor).
 */
export function namedCall(fnName, fn) {
  const rethrow = (e) => { throw named(fnName, e); };
  return {
    [fnName](...args) {
      let result;
      try {
        result = fn.apply(this, args);
      } catch (e) {
        rethrow(e);
      }
      return result instanceof Promise ? result.catch(rethrow) : result;
    },
  }[fnName];
}
