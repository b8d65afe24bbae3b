// The API's operations, written once: the worker client makes its proxies from this table, the
// worker host dispatches by it, and tests/node/operations.test.mjs checks it against index.d.ts
// and against the objects the synchronous and worker APIs return.
//
// args: the parameters in order. 'options' is the options object (with out: it may carry
// options.out); a name of an object kind below (featureMap) is such an object; any other is a
// tensor (matmul's b may also be a packed matrix).
// returns: 'tensor'; an object kind below (the call makes one); 'this' (the object itself);
// 'value' (anything else: a number, a plain object).

/** The instance's calls. */
export const OPERATIONS = {
  memory: { args: [], returns: 'value' },
  threadsUsed: { args: [], returns: 'value' },
  exactAttention: { args: ['q', 'k', 'v', 'options'], out: true, returns: 'tensor' },
  attentionMatrix: { args: ['q', 'k', 'options'], out: true, returns: 'tensor' },
  createFeatureMap: { args: ['options'], returns: 'featureMap' },
  favorAttention: { args: ['q', 'k', 'v', 'options'], out: true, returns: 'tensor' },
  favorAttentionMatrix: { args: ['q', 'k', 'options'], out: true, returns: 'tensor' },
  codebookAttention: { args: ['q', 'k', 'v', 'options'], out: true, returns: 'tensor' },
  codebookAttentionMatrix: { args: ['q', 'k', 'options'], out: true, returns: 'tensor' },
  kmeans: { args: ['k', 'options'], returns: 'tensor' },
  randomCodebook: { args: ['options'], returns: 'tensor' },
  codebookFromFeatureMap: { args: ['featureMap', 'options'], returns: 'tensor' },
  createCausalState: { args: ['options'], returns: 'state' },
  matmul: { args: ['a', 'b', 'options'], out: true, returns: 'tensor' },
  packMatrix: { args: ['b', 'options'], returns: 'matrix' },
  compare: { args: ['exactMatrix', 'approxMatrix'], returns: 'value' },
  outputRelativeError: { args: ['exact', 'approx'], returns: 'value' },
};

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
      append: { args: ['q', 'k', 'v', 'options'], out: true, returns: 'tensor' },
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
