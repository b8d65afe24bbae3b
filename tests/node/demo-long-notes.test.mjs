// The long-text view's sentences (demo/src/long-notes.js) against the figures they state: runs of
// synthetic blocks whose rates, leads and bytes are known in advance, and the committed
// evaluation (model/long-results.json) read independently here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { BLOCK, compareRates, contextOnBins, curveMove, evaluationNote, introNote, runInfo, runNote } from '../../demo/src/long-notes.js';

const PROMPT = 512;
const START = { label: 'its exported W', model: 'long-performer', promptLength: PROMPT, prefillMs: { exact: 120, favor: 80 }, stateBytes: { exact: 1e6, favor: 2.1e5 }, window: 0 };

// A run of `count` blocks of BLOCK characters each (the last `lastChars`): block i's times and
// bytes from the functions given.
function makeRun(count, { exactMs, favorMs, exactBytes = (i) => 1e6 + 1e5 * (i + 1), favorBytes = () => 2.1e5, lastChars = BLOCK }) {
  const blocks = [];
  let position = PROMPT;
  for (let i = 0; i < count; i++) {
    const chars = i === count - 1 ? lastChars : BLOCK, from = position;
    position += chars;
    const side = (ms, stateBytes) => ({ text: 'x'.repeat(chars), ms, charsPerSecond: chars / (ms / 1000), stateBytes });
    blocks.push({ from, position, done: position - PROMPT, exact: side(exactMs(i), exactBytes(i)), favor: side(favorMs(i), favorBytes(i)) });
  }
  return blocks;
}

// The number a sentence prints for x: fmtRate's whole numbers from 100 on, else 3 digits.
const printedRate = (x) => (x >= 100 ? Math.round(x).toLocaleString('en-US') : x.toPrecision(3));
const rate = (list, which) => list.reduce((s, b) => s + b[which].text.length, 0) * 1000 / list.reduce((s, b) => s + b[which].ms, 0);
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('compareRates: a ratio from 1.1 on is said with its factor, either way; within 10 % is about as fast', () => {
  assert.equal(compareRates(2, 1, 'FAVOR+', 'exact'), 'FAVOR+ 2.0× as fast as exact');
  assert.equal(compareRates(1, 3, 'FAVOR+', 'exact'), 'exact 3.0× as fast as FAVOR+');
  assert.equal(compareRates(1.1, 1, 'FAVOR+', 'exact'), 'FAVOR+ 1.1× as fast as exact');
  assert.equal(compareRates(1, 1.1, 'FAVOR+', 'exact'), 'exact 1.1× as fast as FAVOR+');
  for (const r of [1, 1.05, 1 / 1.05, 1.099]) assert.equal(compareRates(r, 1, 'FAVOR+', 'exact'), 'FAVOR+ and exact about as fast (within 10 %)', String(r));
});

test('a run\'s rates are its first and last blocks\' characters over their summed times, up to four blocks each', () => {
  for (const count of [2, 3, 5, 8, 9, 31]) {
    const blocks = makeRun(count, { exactMs: (i) => 20 + 7 * i, favorMs: (i) => 30 + (i % 3), lastChars: count === 31 ? 16 : BLOCK });
    const note = runNote({ start: START, blocks, seed: 3, results: null });
    const k = Math.min(4, Math.ceil(count / 2));
    const first = blocks.slice(0, k), last = blocks.slice(-k);
    const span = (list) => `characters ${(list[0].from + 1).toLocaleString('en-US')}–${list.at(-1).position.toLocaleString('en-US')}`;
    const [ef, ff, el, fl] = [rate(first, 'exact'), rate(first, 'favor'), rate(last, 'exact'), rate(last, 'favor')];
    const sentence = `${k === 1 ? 'First block' : `First ${k} blocks`} (${span(first)}): exact ${printedRate(ef)}, FAVOR+ ${printedRate(ff)} characters/s (${compareRates(ff, ef, 'FAVOR+', 'exact')}); ` +
      `${k === 1 ? 'last block' : `last ${k}`} (${span(last)}): exact ${printedRate(el)}, FAVOR+ ${printedRate(fl)} (${compareRates(fl, el, 'FAVOR+', 'exact')}).`;
    assert.ok(note.includes(sentence), `${count} blocks:\n${note}\nexpected: ${sentence}`);
    // the first characters counted are the first generated, the last the text's end
    assert.ok(note.includes(`(characters ${PROMPT + 1}–`), `${count} blocks`);
  }
  // one block: no first and last to compare
  const one = runNote({ start: START, blocks: makeRun(1, { exactMs: () => 10, favorMs: () => 20 }), seed: 3, results: null });
  assert.doesNotMatch(one, /First|faster in every block/);
  // prefill times: whole milliseconds from 10 on (99.7 is not "1.0·10² ms"), two digits under
  assert.match(runNote({ start: { ...START, prefillMs: { exact: 8.25, favor: 340.4 } }, blocks: [], seed: 1, results: null }), /prefill \(exact 8\.3 ms, FAVOR\+ 340 ms\)/);
  assert.match(runNote({ start: { ...START, prefillMs: { exact: 99.7, favor: 12.4 } }, blocks: [], seed: 1, results: null }), /prefill \(exact 100 ms, FAVOR\+ 12 ms\)/);
  assert.match(one, /^Interleaved: 64 characters with the exact cache, then 64 with the FAVOR\+ state \(its exported W\), .* sampling seed \(3\)\. .*prefill \(exact 120 ms, FAVOR\+ 80 ms\) is not in them\. Memory/);
});

test('where FAVOR+ led: from the first block of its lead to the end, said only when that lead is three blocks or more', () => {
  const note = (exactMs, favorMs, count = 10) => runNote({ start: START, blocks: makeRun(count, { exactMs, favorMs }), seed: 1, results: null });
  // exact slows by 10 ms a block and FAVOR+ stays at 40 ms: equal at block 2, FAVOR+ ahead from block 3
  assert.ok(note((i) => 20 + 10 * i, () => 40).includes(`FAVOR+ was faster in every block from character ${(PROMPT + 3 * BLOCK + 1).toLocaleString('en-US')} on.`));
  assert.ok(note(() => 50, () => 40).includes('FAVOR+ was faster in every block.'));
  assert.ok(note(() => 30, () => 40).includes('The exact cache was faster in every block.'));
  // a lead of the last two blocks only, one of three blocks in all, and a lead lost at the end: nothing said
  for (const [exactMs, favorMs, count] of [[(i) => (i >= 8 ? 50 : 30), () => 40, 10], [() => 50, () => 40, 2], [(i) => (i === 9 ? 30 : 50), () => 40, 10]]) {
    const text = note(exactMs, favorMs, count);
    assert.doesNotMatch(text, /faster in every block/, text);
  }
  // FAVOR+ ahead in its last three blocks after trailing: said from the first of them
  assert.ok(note((i) => (i >= 7 ? 50 : 30), () => 40).includes(`from character ${(PROMPT + 7 * BLOCK + 1).toLocaleString('en-US')} on.`));
});

test('memory: the cache from after the prompt to the end, its allocation\'s steps, the state\'s bytes and their ratio', () => {
  const memory = (blocks) => runNote({ start: START, blocks, seed: 1, results: null }).match(/Memory .*$/)[0];
  // the cache grows in two steps over ten blocks, the state keeps its bytes
  const steps = makeRun(10, { exactMs: () => 30, favorMs: () => 20, exactBytes: (i) => (i < 4 ? 1e6 : i < 7 ? 2e6 : 4e6) });
  assert.equal(memory(steps), 'Memory (the bytes each method\'s states hold in wasm memory, summed over the layers): the exact cache went from 1.00 MB after the prompt ' +
    `to 4.00 MB after ${(PROMPT + 10 * BLOCK).toLocaleString('en-US')} characters (its allocation grew in 2 steps); the FAVOR+ state stayed at 210 kB; at the end the cache holds 19.0× the state's bytes.`);
  // one step
  assert.match(memory(makeRun(5, { exactMs: () => 30, favorMs: () => 20, exactBytes: (i) => (i < 2 ? 1e6 : 3e6) })), /\(its allocation grew in 1 step\);/);
  // a new size at every block: no steps to tell
  assert.doesNotMatch(memory(makeRun(5, { exactMs: () => 30, favorMs: () => 20 })), /allocation grew/);
  // a state that varies, and a cache never above it: its range, no ratio
  const small = memory(makeRun(3, { exactMs: () => 30, favorMs: () => 20, exactBytes: () => 1e5, favorBytes: (i) => 2e5 + 1e4 * i }));
  // bytes that three digits would round up to the next unit are said in it
  assert.match(memory(makeRun(1, { exactMs: () => 30, favorMs: () => 20, exactBytes: () => 999.7e3, favorBytes: () => 999.7 })),
    /to 1\.00 MB after .*the FAVOR\+ state stayed between 1\.00 kB and 210 kB/);
  assert.match(small, /went from 1\.00 MB after the prompt to 100 kB .*the FAVOR\+ state stayed between 200 kB and 220 kB\.$/);
  // a state that varies under a larger cache: the ratio to its largest
  const varies = memory(makeRun(3, { exactMs: () => 30, favorMs: () => 20, exactBytes: () => 5e6, favorBytes: (i) => 2e5 + 1.5e5 * i }));
  assert.match(varies, /stayed between 200 kB and 500 kB; at the end the cache holds 10\.0× the state's bytes\.$/);
});

test('the trained-with-FAVOR+ sentence quotes the evaluation\'s curve of the run\'s own window, and only that one', () => {
  const results = {
    curves: [
      { id: 'performer-favor', all: { mean: 2.57 } },
      { id: 'performer-favor-window', window: 256, all: { mean: 2.51 } },
      { id: 'performer-exact', all: { mean: 3.48 } },
    ],
  };
  const blocks = makeRun(2, { exactMs: () => 30, favorMs: () => 20 });
  const whole = runNote({ start: START, blocks, seed: 1, results });
  assert.ok(whole.includes('long-performer was trained with FAVOR+, so exact attention on its q and k is not what it learned: on held-out text it predicts worse that way ' +
    '(3.48 against 2.57 bits per character with FAVOR+ over the whole prefix, over 8k-character sequences, below), so the exact column\'s text is the poorer one; what the two columns compare is time and memory.'), whole);
  const windowed = runNote({ start: { ...START, window: 256 }, blocks, seed: 1, results });
  assert.ok(windowed.includes('(3.48 against 2.51 bits per character with FAVOR+ over a window of 256,'), windowed);
  // the exact way better: no "poorer"
  const better = runNote({ start: START, blocks, seed: 1, results: { curves: [{ id: 'performer-favor', all: { mean: 3 } }, { id: 'performer-exact', all: { mean: 2.5 } }] } });
  assert.match(better, /predicts better that way \(2\.50 against 3\.00 .*below\), what the two columns compare/);
  // a window the evaluation did not run, and no results yet: not said
  assert.doesNotMatch(runNote({ start: { ...START, window: 128 }, blocks, seed: 1, results }), /trained with FAVOR\+/);
  assert.doesNotMatch(runNote({ start: START, blocks, seed: 1, results: null }), /trained with FAVOR\+/);
});

test('the line under each column and the note before any run', () => {
  const blocks = makeRun(3, { exactMs: (i) => 100 + 100 * i, favorMs: () => 32, exactBytes: () => 3.5e6 });
  assert.deepEqual(runInfo({ exact: 'x'.repeat(192), favor: 'y'.repeat(192), blocks }), {
    exact: '192 characters; last block 213 characters/s, cache 3.50 MB',
    favor: '192 characters; last block 2,000 characters/s, state 210 kB',
  });
  assert.equal(introNote({ rotary: true, context: 1024 }), 'The long-performer model (rotary positions, trained with a context of 1,024 characters) continues the text above with exact attention, ' +
    'through a key/value cache that grows by one position per character, and with FAVOR+, through a state whose size does not grow with the text.');
  assert.match(introNote(undefined), /^The long-performer model continues the text above/);
});

test('the training context on the bin axis: at a bin\'s edge between bins, inside one by its fraction, none past the last', () => {
  const bins = [{ from: 0, to: 256 }, { from: 256, to: 1024 }, { from: 1024, to: 2048 }, { from: 2048, to: 4096 }];
  assert.equal(contextOnBins({ bins, context: 1024 }), 1.5);
  assert.equal(contextOnBins({ bins, context: 256 }), 0.5);
  assert.equal(contextOnBins({ bins, context: 1536 }), 2);
  assert.equal(contextOnBins({ bins, context: 64 }), -0.25);
  assert.equal(contextOnBins({ bins, context: 4096 }), 3.5);
  assert.equal(contextOnBins({ bins, context: 8192 }), null);
  // it moves right with the context, bin after bin
  let x = -Infinity;
  for (let c = 1; c <= 4096; c += 37) {
    const at = contextOnBins({ bins, context: c });
    assert.ok(at > x, `${c}: ${at} after ${x}`);
    x = at;
  }
});

test('the evaluation\'s note states the committed results: each curve from the bin where the training context ends to the last', () => {
  const r = JSON.parse(readFileSync(new URL('../../model/long-results.json', import.meta.url), 'utf8'));
  const note = evaluationNote(r);
  const before = r.bins.findIndex((b) => b.to >= r.context), lastBin = r.bins.length - 1;
  assert.ok(before >= 0 && before < lastBin, 'the committed evaluation runs past its training context');
  assert.ok(note.includes(`cut into ${r.sequences} sequences of ${r.length.toLocaleString('en-US')} characters`));
  assert.ok(note.includes(`${r.cpu}, Node ${r.node}, ${r.threads} thread${r.threads > 1 ? 's' : ''})`));
  // the windows: the exact one sees the training context; FAVOR+'s blocks of w/4, a character seeing its own up to itself and the 3 before
  const w = r.curves.find((c) => c.id === 'performer-favor-window').window;
  assert.ok(note.includes(`(all of them, or the last ${r.context.toLocaleString('en-US')} for the exact sliding window, the last ${w - w / 4 + 1} to ${w} for FAVOR+ over a window (blocks of ${w / 4}))`), note);
  for (const c of r.curves) {
    const means = c.bins.slice(before).map((x) => x.mean), a = means[0], b = means.at(-1);
    const said = note.match(new RegExp(`${escape(c.label)}: (stays within 0\\.05 \\((\\d+\\.\\d+) → (\\d+\\.\\d+)\\)|(rises|falls) from (\\d+\\.\\d+) to (\\d+\\.\\d+)|ends within 0\\.05 of where it starts \\((\\d+\\.\\d+) → (\\d+\\.\\d+)\\) after (rising|falling) to (\\d+\\.\\d+))`));
    assert.ok(said, `${c.label} in: ${note}`);
    const [from, to] = said[2] ? [said[2], said[3]] : said[5] ? [said[5], said[6]] : [said[7], said[8]];
    assert.ok(Math.abs(Number(from) - a) <= 0.005 && Math.abs(Number(to) - b) <= 0.005, `${c.label}: ${from} → ${to}, the results ${a} → ${b}`);
    // "stays within" holds at every bin between; "ends within" names a bin that strays
    if (said[2]) assert.ok(means.every((x) => Math.abs(x - a) < 0.05), `${c.label}: ${means}`);
    else if (said[7]) assert.ok(Math.abs(b - a) < 0.05 && means.some((x) => Math.abs(x - a) >= 0.05 && Math.abs(x - Number(said[10])) <= 0.005), `${c.label}: ${means}`);
    else assert.equal(said[4], b > a ? 'rises' : 'falls', c.label);
  }
  const edge = r.bins[before].to === r.context ? 'the last within the training context' : 'the one where the training context ends';
  assert.ok(note.includes(`(${edge})`));
});

test('what a curve does: stays within 0.05 only where every bin does; a bin that strays further is named', () => {
  const bins = [{ from: 256, to: 1024 }, { from: 1024, to: 2048 }, { from: 2048, to: 4096 }, { from: 4096, to: 8192 }];
  assert.equal(curveMove([2.5, 2.52, 2.48, 2.54], bins), 'stays within 0.05 (2.50 → 2.54)');
  // the committed Performer window curve: its ends 0.05 apart, its 1k–2k bin 0.09 above
  assert.equal(curveMove([2.513, 2.604, 2.561, 2.562], bins), 'ends within 0.05 of where it starts (2.51 → 2.56) after rising to 2.60 at 1k–2k');
  assert.equal(curveMove([2.5, 2.4, 2.46, 2.52], bins), 'ends within 0.05 of where it starts (2.50 → 2.52) after falling to 2.40 at 1k–2k');
  assert.equal(curveMove([2, 2.5, 3, 4], bins), 'rises from 2.00 to 4.00');
  assert.equal(curveMove([2, 3.5, 3, 2.5], bins), 'rises from 2.00 to 2.50 (through 3.50 at 1k–2k)');
  assert.equal(curveMove([3, 2.9, 2.5, 2.6], bins), 'falls from 3.00 to 2.60 (through 2.50 at 2k–4k)');
  assert.equal(curveMove([2, 2.06], bins.slice(2)), 'rises from 2.00 to 2.06');
});

test('the evaluation\'s note where the context ends inside a bin, or past every bin', () => {
  const curve = (label, means) => ({ id: label, label, window: 0, seeds: [1], bins: means.map((mean) => ({ mean, sd: 0.1, n: 3 })) });
  const r = {
    cpu: 'a CPU', node: 'v26', threads: 1, sequences: 2, length: 4096, context: 1500,
    bins: [{ from: 0, to: 1024 }, { from: 1024, to: 2048 }, { from: 2048, to: 4096 }],
    curves: [curve('up', [2, 2.1, 3]), curve('down', [3, 2.9, 2.5]), curve('flat', [2, 2.2, 2.24])],
  };
  const note = evaluationNote(r);
  assert.ok(note.includes(' From the bin 1k–2k (the one where the training context ends) to 2k–4k: up: rises from 2.10 to 3.00; down: falls from 2.90 to 2.50; flat: stays within 0.05 (2.20 → 2.24).'), note);
  assert.match(note, /1 thread\)/);
  assert.match(evaluationNote({ ...r, threads: 4 }), /a CPU, Node v26, 4 threads\)/);
  // past every bin, or in the last: nothing beyond the context to tell
  for (const context of [4096, 9000]) assert.doesNotMatch(evaluationNote({ ...r, context }), /From the bin/);
});
