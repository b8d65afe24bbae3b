// The API's operations, written once: the worker client makes its proxies from this table, the
// worker host dispatches by it, and tests/node/operations.test.mjs checks it against index.d.ts
// and against the objects the synchronous and worker APIs return.
//
// args: the parameters in order. 'options' is the options object (with out: it may carry
// options.out; its keys: `options`); a name of an object kind below (featureMap) is such an
// object; any other is a tensor (matmul's b may also be a packed matrix).
// returns: 'tensor'; an object kind below (the call makes one); 'this' (the object itself);
// 'value' (anything else: a number, a plain object).

// options: the keys its options object may have (any other own enumerable key is an error).
const ATTENTION = ['causal', 'scale', 'keyMask', 'out'];
const CODEBOOK = [...ATTENTION, 'codebook', 'assignment', 'temperature'];

/** The instance's calls. */
export const OPERATIONS = {
  memory: { args: [], returns: 'value' },
  threadsUsed: { args: [], returns: 'value' },
  exactAttention: { args: ['q', 'k', 'v', 'options'], options: ATTENTION, out: true, returns: 'tensor' },
  attentionMatrix: { args: ['q', 'k', 'options'], options: ATTENTION, out: true, returns: 'tensor' },
  createFeatureMap: {
    args: ['options'], options: ['dim', 'features', 'kernel', 'sampling', 'seed', 'projection', 'epsilon', 'rho', 'fit'],
    returns: 'featureMap',
  },
  favorAttention: { args: ['q', 'k', 'v', 'options'], options: [...ATTENTION, 'featureMap', 'chunk'], out: true, returns: 'tensor' },
  favorAttentionMatrix: { args: ['q', 'k', 'options'], options: [...ATTENTION, 'featureMap'], out: true, returns: 'tensor' },
  codebookAttention: { args: ['q', 'k', 'v', 'options'], options: [...CODEBOOK, 'chunk'], out: true, returns: 'tensor' },
  codebookAttentionMatrix: { args: ['q', 'k', 'options'], options: CODEBOOK, out: true, returns: 'tensor' },
  kmeans: { args: ['k', 'options'], options: ['clusters', 'iterations', 'seed'], returns: 'tensor' },
  randomCodebook: { args: ['options'], options: ['clusters', 'dim', 'seed', 'sigma'], returns: 'tensor' },
  codebookFromFeatureMap: { args: ['featureMap', 'options'], options: ['scale'], returns: 'tensor' },
  createCausalState: {
    args: ['options'], options: ['method', 'scale', 'featureMap', 'codebook', 'assignment', 'temperature', 'chunk', 'window'],
    returns: 'state',
  },
  matmul: { args: ['a', 'b', 'options'], options: ['transposeB', 'bias', 'out'], out: true, returns: 'tensor' },
  packMatrix: { args: ['b', 'options'], options: ['transposeB'], returns: 'matrix' },
  compare: { args: ['exact', 'approx'], returns: 'value' },
  outputRelativeError: { args: ['exact', 'approx'], returns: 'value' },
};

/** createFeatureMap's options.fit. */
export const FIT_OPTIONS = ['q', 'k', 'scale'];

/**
 * The objects calls make, by kind (the name their errors use: "state: this causal state has been
 * disposed"). name: the class (an argument's class name tells another instance's object);
 * what: what the errors call it; settings: fixed when it is made (a worker proxy copies them);
 * getters: read at each use (through the worker, a call returning a Promise); methods: as
 * OPERATIONS.
 */
export const OBJECTS = {
  featureMap: {
    name: 'FeatureMap',
    what: 'feature map',
    settings: ['dim', 'features', 'numFeatures', 'kernel', 'sampling', 'epsilon', 'rho', 'dataDependent'],
    getters: ['projection'],
    methods: { redraw: { args: ['seed'], returns: 'this' } },
  },
  state: {
    name: 'CausalState',
    what: 'causal state',
    settings: ['method'],
    getters: ['length', 'stateBytes'],
    methods: {
      append: { args: ['q', 'k', 'v', 'options'], options: ['keyMask', 'out'], out: true, returns: 'tensor' },
      reset: { args: [], returns: 'this' },
    },
  },
  matrix: {
    name: 'PackedMatrix',
    what: 'packed matrix',
    settings: ['dims', 'transposeB'],
    getters: ['bytes'],
    methods: {},
  },
};

// Besides the table: every object has `disposed` and dispose() (its base class's), and the
// instance `info` and dispose() (the loader's: in a worker, dispose() ends the worker).
export const LIFECYCLE = { instance: ['info', 'dispose'], object: ['disposed', 'dispose'] };

/** Where a call's options argument is, or -1. */
export const optionsIndex = (spec) => spec.args.indexOf('options');

/**
 * Every key the API reads from an argument object: the options' and a tensor's. It reads each
 * through the prototype chain, getters included, and checks only own enumerable ones.
 */
export const READ_KEYS = [...new Set([
  ...Object.values(OPERATIONS).flatMap((spec) => spec.options ?? []),
  ...Object.values(OBJECTS).flatMap((kind) => Object.values(kind.methods).flatMap((spec) => spec.options ?? [])),
  ...FIT_OPTIONS, 'data', 'dims',
])];
