// The page's settings and its URL (demo/src/settings.js): a link with no query opens on the
// trained model with the defaults; every setting read from a query string is one the page can
// show (anything unknown or out of range falls back to its default); and the query string
// written for some settings gives those settings back, so a copied link reopens the same page.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DEFAULTS, GEN_RANGE, LISTS, TEXT_LIMIT, applyControl, genLengthIn, parseSettings, settingOf, settingsQuery } from '../../demo/src/settings.js';
import { KERNELS, SAMPLINGS, STUDY_KERNELS, isCodebook } from '../../demo/src/modes.js';
import { modeControls } from '../../demo/src/mode-controls.js';
import { rng } from './helpers.mjs';

test('no query: the trained model and the defaults; its URL gives them back', () => {
  const s = parseSettings('');
  assert.deepEqual(s, { ...DEFAULTS, rowFollow: true });
  assert.equal(s.pattern, 'model');
  const q = new URLSearchParams(settingsQuery(s));
  assert.equal(q.get('pattern'), 'model');
  assert.equal(q.has('text'), false, 'the default text is not written into the URL');
  assert.equal(q.has('row'), false, 'a row that follows the text is not written');
  assert.deepEqual(parseSettings(settingsQuery(s)), s);
});

test('values out of range or unknown fall back to their defaults; sizes snap to the nearest offered', () => {
  const s = parseSettings('?pattern=gaussian&L=1000&d=3&m=300&kernel=softmax&sampling=sobol&temp=0.3&scale=9&seed=-1&row=5000&sseeds=99&smax=100&smetric=nope&skernels=relu,bogus');
  assert.equal(s.pattern, 'gaussian');
  assert.equal(s.L, 1024);
  assert.equal(s.d, 4);
  assert.equal(s.m, 256);
  assert.equal(s.kernel, DEFAULTS.kernel);
  assert.equal(s.sampling, DEFAULTS.sampling);
  assert.equal(s.tempStep, -5);  // T = 10^(-5/10) ≈ 0.32, the slider's nearest step to 0.3
  assert.equal(s.scale, DEFAULTS.scale);
  assert.equal(s.seed, DEFAULTS.seed);
  assert.equal(s.row, 128, 'a row past L falls back to min(128, L/2)');
  assert.equal(s.studySeeds, null);
  assert.equal(s.studyMmax, null);
  assert.equal(s.studyMetric, null);
  assert.deepEqual(s.studyKernels, ['relu']);
  assert.equal(parseSettings(`?text=${'a'.repeat(TEXT_LIMIT + 50)}`).text.length, TEXT_LIMIT);
});

test('links without a pattern: Gaussian (links from before the model), unless they name what only a model has', () => {
  assert.equal(parseSettings('?L=64&kernel=relu').pattern, 'gaussian');
  assert.equal(parseSettings('?layer=1&kernel=relu').pattern, 'model');
  assert.equal(parseSettings('?text=Call%20me%20Ishmael').pattern, 'model');
});

test('random settings: their URL gives them back', () => {
  const g = rng(5);
  const pick = (list) => list[Math.floor(g.uniform() * list.length)];
  // A random nonempty part of a list.
  const some = (list) => { const part = list.filter(() => g.uniform() < 0.5); return part.length ? part : [pick(list)]; };
  const patterns = ['model', 'gaussian', 'clustered', 'banded'];
  for (let trial = 0; trial < 300; trial++) {
    const pattern = pick(patterns);
    const L = pick(LISTS.L);
    const s = parseSettings(`?pattern=${pattern}`);
    Object.assign(s, {
      L, d: pick(LISTS.d), m: pick(LISTS.m), kernel: pick(KERNELS), sampling: pick(SAMPLINGS),
      tempStep: Math.floor(g.uniform() * 31) - 20, seed: Math.floor(g.uniform() * 1e6), dataSeed: Math.floor(g.uniform() * 1e6),
      scale: Math.round((0.05 + g.uniform() * 1.45) * 20) / 20, causal: g.uniform() < 0.5, log: pick([null, true, false]),
      studyKernels: some(STUDY_KERNELS), studySamplings: some(SAMPLINGS),
      studySet: pick(['grid', 'compare']), studySeeds: pick([null, 2, 7, 32]), studyMmax: pick([null, 64, 2048]),
      studyMetric: pick([null, 'mse', 'meanRowKL']),
    });
    if (pattern === 'model') {
      Object.assign(s, { layer: Math.floor(g.uniform() * 4), head: Math.floor(g.uniform() * 4), trainedW: g.uniform() < 0.5,
        text: g.uniform() < 0.5 ? s.text : 'Call me Ishmael. & = ? #', genN: 1 + Math.floor(g.uniform() * 255),
        longN: pick([64, 2000, 16384]), longWindow: pick([0, 256]), studyHeads: pick(['all', 'selected']) });
      s.rowFollow = g.uniform() < 0.5;
      s.row = s.rowFollow ? DEFAULTS.row : Math.floor(g.uniform() * 256);
    } else {
      s.row = Math.floor(g.uniform() * L);
    }
    const back = parseSettings(settingsQuery(s));
    // What the mode does not use is not written: those settings come back as their defaults.
    const used = pattern === 'model'
      ? { ...s, L: DEFAULTS.L, d: DEFAULTS.d, causal: DEFAULTS.causal, scale: DEFAULTS.scale, dataSeed: DEFAULTS.dataSeed }
      : { ...s, layer: DEFAULTS.layer, head: DEFAULTS.head, model: DEFAULTS.model, trainedW: DEFAULTS.trainedW, text: DEFAULTS.text,
        genN: DEFAULTS.genN, longN: DEFAULTS.longN, longWindow: DEFAULTS.longWindow, studyHeads: DEFAULTS.studyHeads };
    assert.deepEqual(back, used, `trial ${trial}: ${settingsQuery(s)}`);
  }
});

test('a control into the settings: what it changes, what it clamps, what it refuses, and whether to compute', () => {
  const synthetic = () => parseSettings('?pattern=gaussian&L=256&row=100');
  const apply = (s, key, input, ctx) => [applyControl(s, key, input, ctx), s];

  // Sliders hold indices into their lists; the scale snaps to 0.05.
  let [what, s] = apply(synthetic(), 'm', { value: String(LISTS.m.indexOf(64)) });
  assert.equal(what, 'compute');
  assert.equal(s.m, 64);
  [, s] = apply(synthetic(), 'scale', { value: '0.73' });
  assert.equal(s.scale, 0.75);
  // A shorter L pulls the inspected row inside it.
  [, s] = apply(synthetic(), 'L', { value: String(LISTS.L.indexOf(64)) });
  assert.equal(s.L, 64);
  assert.equal(s.row, 63);
  // The row: clamped to L (or the model's drawn text), no longer following the text; only a redraw.
  [what, s] = apply(synthetic(), 'row', { value: '9999' });
  assert.deepEqual([what, s.row, s.rowFollow], ['draw', 255, false]);
  [what, s] = apply(parseSettings(''), 'row', { value: '300' }, { modelL: 180 });
  assert.deepEqual([what, s.row, s.rowFollow], ['draw', 179, false]);
  [what, s] = apply(synthetic(), 'row', { value: '-5' });
  assert.deepEqual([what, s.row], ['draw', 0], 'a negative row clamps to 0 as a large one to the last');
  // an empty box: on a model, back to following the text's last character; synthetic, refused
  [what, s] = apply(parseSettings('?pattern=model&row=40'), 'row', { value: ' ' }, { modelL: 180 });
  assert.deepEqual([what, s.rowFollow], ['draw', true]);
  assert.equal(applyControl(synthetic(), 'row', { value: '' }), null);
  assert.equal(applyControl(synthetic(), 'row', { value: 'abc' }), null);
  // Seeds: whole, at most 999999; a negative or non-number is refused and changes nothing.
  [, s] = apply(synthetic(), 'seed', { value: '12.9' });
  assert.equal(s.seed, 12);
  [, s] = apply(synthetic(), 'dataSeed', { value: '5000000' });
  assert.equal(s.dataSeed, 999999);
  for (const value of ['-1', 'abc', 'NaN', '', ' ']) {
    const before = synthetic();
    const after = structuredClone(before);
    assert.equal(applyControl(after, 'seed', { value }), null, `seed '${value}'`);
    assert.deepEqual(after, before);
  }
  // Checkboxes read `checked`; the log scale only redraws.
  [what, s] = apply(synthetic(), 'log', { checked: true });
  assert.deepEqual([what, s.log], ['draw', true]);
  [what, s] = apply(synthetic(), 'causal', { checked: true });
  assert.deepEqual([what, s.causal], ['compute', true]);
  // Unchosen, the colours follow the mode, and causal synthetic inputs open on log colours; a
  // chosen scale stays whatever causal does.
  assert.equal(settingOf(s, 'log'), true);
  assert.equal(settingOf(apply(s, 'causal', { checked: false })[1], 'log'), false);
  assert.equal(settingOf(parseSettings('?pattern=gaussian&causal=1&log=0'), 'log'), false);
  assert.equal(settingOf(parseSettings('?pattern=gaussian&causal=0&log=1'), 'log'), true);
  assert.equal(settingOf(parseSettings(''), 'log'), true);
  assert.equal(settingOf(parseSettings('?pattern=gaussian'), 'studyMetric'), 'kernelMSE');
  assert.equal(settingOf(parseSettings(''), 'studyMetric'), 'meanRowKL');
  // Editing the text returns the row to its last character.
  s = parseSettings('?row=10');
  assert.equal(s.rowFollow, false);
  applyControl(s, 'text', { value: 'Call me Ishmael.' });
  assert.deepEqual([s.text, s.rowFollow], ['Call me Ishmael.', true]);
  // A k-means codebook on a model's text starts at 32 codewords where m was half the text or more,
  // and keeps a smaller m; on synthetic inputs at 4 where m was half of L or more.
  [, s] = apply(parseSettings(''), 'kernel', { value: 'vq' }, { modelL: 256 });
  assert.deepEqual([s.kernel, s.m], ['vq', 32]);
  s = parseSettings('?m=16');
  applyControl(s, 'kernel', { value: 'soft-vq' }, { modelL: 256 });
  assert.equal(s.m, 16);
  [, s] = apply(synthetic(), 'kernel', { value: 'vq' });
  assert.deepEqual([s.L, DEFAULTS.m, s.m], [256, 256, 4]);
  s = synthetic();
  s.L = 1024;
  applyControl(s, 'kernel', { value: 'soft-vq' });
  assert.equal(s.m, DEFAULTS.m, 'm = 256 of L = 1,024 kept');
  [, s] = apply(parseSettings(''), 'kernel', { value: 'relu' }, { modelL: 256 });
  assert.equal(s.m, DEFAULTS.m, 'random features keep m');
  // Back on random features, m is the features' again, unless it was changed meanwhile; not in the URL.
  s = synthetic();
  for (const kernel of ['vq', 'soft-vq']) applyControl(s, 'kernel', { value: kernel });
  assert.equal(s.m, 4);
  assert.doesNotMatch(settingsQuery(s), /featuresM/);
  applyControl(s, 'kernel', { value: 'hyperbolic' });
  assert.equal(s.m, DEFAULTS.m, 'the features\' m back');
  applyControl(s, 'kernel', { value: 'vq' });
  applyControl(s, 'm', { value: String(LISTS.m.indexOf(16)) });
  applyControl(s, 'kernel', { value: 'positive' });
  assert.equal(s.m, 16, 'a codebook size chosen by hand stays');
  applyControl(s, 'kernel', { value: 'vq' });
  assert.equal(s.m, 16, 'and is below L / 2: kept');
});

test('the generation\'s length box: clamped into 1–255 like the row box; what is not a number keeps the last length', () => {
  assert.deepEqual(GEN_RANGE, [1, 255]);
  assert.equal(genLengthIn('30', 60), 30);
  assert.equal(genLengthIn(' 255 ', 60), 255);
  assert.equal(genLengthIn('999', 60), 255);
  assert.equal(genLengthIn('0', 60), 1);
  assert.equal(genLengthIn('-5', 60), 1);
  assert.equal(genLengthIn('12.6', 60), 13);
  for (const junk of ['', '  ', 'abc', 'NaN', 'Infinity', null, undefined]) assert.equal(genLengthIn(junk, 42), 42, `${junk}`);
  // the URL takes only what the box could hold
  assert.equal(parseSettings('?pattern=model&gen=255').genN, 255);
  assert.equal(parseSettings('?pattern=model&gen=256').genN, DEFAULTS.genN);
});

test('the long-text view\'s FAVOR+ window in the URL: one of the select\'s choices, or the whole prefix', () => {
  assert.equal(DEFAULTS.longWindow, 0);
  assert.equal(parseSettings('?pattern=model&lwin=256').longWindow, 256);
  assert.equal(parseSettings('?lwin=256').pattern, 'model', 'a link naming the window means the model');
  for (const other of ['100', '-256', '256.5', 'x', '']) assert.equal(parseSettings(`?pattern=model&lwin=${other}`).longWindow, 0, other);
  assert.match(settingsQuery(parseSettings('?pattern=model&lwin=256')), /(^|&)lwin=256(&|$)/);
  assert.doesNotMatch(settingsQuery(parseSettings('?pattern=model')), /lwin/);
  assert.doesNotMatch(settingsQuery({ ...parseSettings('?pattern=gaussian'), longWindow: 256 }), /lwin/, 'not written out of model mode');
});

test('the form by mode: sampling, temperature, m and the text on what is drawn follow the kernel and the input', () => {
  for (const pattern of ['model', 'gaussian']) {
    for (const kernel of KERNELS) {
      const s = parseSettings(`?pattern=${pattern}&kernel=${kernel}&sampling=simplex&L=64&m=128&temp=0.3`);
      const f = modeControls(s);
      const codebook = ['vq', 'soft-vq', 'performer-vq'].includes(kernel);
      assert.equal(f.sampling.disabled, codebook, `${kernel}: sampling is used by feature maps only`);
      assert.equal(f.sampling.value, kernel === 'performer-vq' ? 'orthogonal-fixed' : 'simplex', kernel);
      assert.equal(f.samplingNote === null, !codebook, `${kernel}: a disabled menu says why`);
      assert.equal(f.temperature.shown, kernel === 'soft-vq', kernel);
      assert.equal(f.mLabel, codebook ? 'codewords m' : 'features m', kernel);
      assert.equal(f.about, pattern === 'model' ? 'model' : codebook ? 'vq' : 'features', `${pattern} ${kernel}`);
      // k-means has at most one codeword per key; Performer as soft VQ samples its m codewords
      if (kernel === 'vq' || kernel === 'soft-vq') assert.match(f.mNote, /^m = 128 > L: k-means uses m = L = 64 codewords/);
      else assert.equal(f.mNote, null, kernel);
      // the speed study times FAVOR+ with the m and sampling the form shows; where m counts
      // k-means codewords, with FAVOR+'s defaults
      const kmeans = kernel === 'vq' || kernel === 'soft-vq';
      assert.deepEqual(f.speed, kmeans ? { m: DEFAULTS.m, sampling: DEFAULTS.sampling, kmeans }
        : { m: f.features.m, sampling: f.sampling.value, kmeans }, `${pattern} ${kernel}`);
    }
  }
  // without an exported W the box is off (even where the URL's setting is on) and the features are the controls'
  for (const kernel of KERNELS) {
    const f = modeControls(parseSettings(`?pattern=model&model=softmax&kernel=${kernel}&tw=1`), { hasExported: false });
    assert.equal(f.trainedW.checked, false, kernel);
    assert.equal(f.trainedW.disabled, true, kernel);
    assert.equal(f.trainedW.note, null, kernel);
    assert.equal(f.features.disabled, false, kernel);
  }
  const soft = modeControls(parseSettings('?pattern=gaussian&kernel=soft-vq&temp=0.3&L=256&m=64'));
  assert.deepEqual(soft.temperature, { shown: true, step: -5, text: '0.32' });
  assert.equal(soft.mNote, null, 'm <= L is not capped');
});

test('the Performer\'s exported W: used with the positive kernel only; while used, sampling, m and the seed are not', () => {
  for (const kernel of KERNELS) {
    for (const tw of [0, 1]) {
      const s = parseSettings(`?pattern=model&model=performer&kernel=${kernel}&sampling=simplex&tw=${tw}`);
      const f = modeControls(s, { hasExported: true });
      const used = kernel === 'positive' && tw === 1;
      assert.equal(f.trainedW.checked, tw === 1, `${kernel} tw=${tw}: the box shows the setting`);
      assert.equal(f.trainedW.disabled, kernel !== 'positive', `${kernel}: the box is the positive kernel's`);
      assert.equal(f.trainedW.note !== null, kernel !== 'positive' && tw === 1, `${kernel} tw=${tw}: a ticked box that is not used says so`);
      assert.equal(f.features.disabled, used, `${kernel} tw=${tw}`);
      assert.equal(f.features.m, used ? 64 : s.m, `${kernel} tw=${tw}: the m shown is the m used`);
      if (!['vq', 'soft-vq'].includes(kernel)) assert.deepEqual([f.speed.m, f.speed.sampling], [f.features.m, f.sampling.value], `${kernel} tw=${tw}: the speed study's FAVOR+`);
      assert.equal(f.sampling.disabled, used || isCodebook(kernel), `${kernel} tw=${tw}`);
      if (used) {
        assert.equal(f.sampling.value, 'orthogonal', 'the exported W\'s sampling is shown');
        assert.match(f.samplingNote, /^Not used, nor m and the feature seed: the model's exported W is its last training draw \(orthogonal, m = 64\)/);
      } else if (!isCodebook(kernel)) {
        assert.equal(f.sampling.value, 'simplex', kernel);
        assert.equal(f.samplingNote, null, kernel);
      }
    }
  }
  // synthetic inputs never use it
  assert.equal(modeControls(parseSettings('?pattern=gaussian&kernel=positive&tw=1'), { hasExported: true }).features.disabled, false);
});

test('the inspector\'s spread over draws: off by default and unwritten; on, in the URL and back', () => {
  for (const pattern of ['model', 'gaussian']) {
    const s = parseSettings(`?pattern=${pattern}`);
    assert.equal(s.spread, false);
    assert.equal(new URLSearchParams(settingsQuery(s)).has('spread'), false);
    assert.equal(applyControl(s, 'spread', { checked: true }), 'compute', 'the draws are computed in the worker');
    assert.equal(new URLSearchParams(settingsQuery(s)).get('spread'), '1');
    assert.equal(parseSettings(settingsQuery(s)).spread, true);
  }
});
