// Rotary positions of the runner (model/layers.js RotaryTable): rotate against a float64 rotation
// of each pair of halves by p·base^(−2c/d), and unrotate as its inverse (model/eval-heads.mjs
// undoes the rotation to see the keys a rotary model's heads start from).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { RotaryTable } from '../../model/layers.js';
import { rng } from './helpers.mjs';

test('rotate turns each pair (x_c, x_{c+d/2}) of row i by the angle (position0 + i)·base^(−2c/d); unrotate turns it back', () => {
  const g = rng(21);
  const [H, L, d, base, position0] = [2, 50, 8, 10000, 1000];
  const x = Float32Array.from({ length: H * L * d }, () => g.normal());
  const table = new RotaryTable(d, base);
  const turned = table.rotate({ data: Float32Array.from(x), dims: [H, L, d] }, position0).data;
  const half = d / 2;
  for (let h = 0; h < H; h++) {
    for (let i = 0; i < L; i++) {
      const row = (h * L + i) * d;
      for (let c = 0; c < half; c++) {
        const a = (position0 + i) * base ** (-2 * c / d), x1 = x[row + c], x2 = x[row + half + c];
        // cos and sin are kept in float32: a few ulp of the pair's length
        const tol = 1e-6 * Math.hypot(x1, x2) + 1e-7;
        assert.ok(Math.abs(turned[row + c] - (x1 * Math.cos(a) - x2 * Math.sin(a))) <= tol, `${h} ${i} ${c}`);
        assert.ok(Math.abs(turned[row + half + c] - (x1 * Math.sin(a) + x2 * Math.cos(a))) <= tol, `${h} ${i} ${c}`);
      }
    }
  }
  const back = table.unrotate({ data: Float32Array.from(turned), dims: [H, L, d] }, position0).data;
  for (let n = 0; n < x.length; n++) assert.ok(Math.abs(back[n] - x[n]) <= 1e-6 * (1 + Math.abs(x[n])), `${n}: ${back[n]} against ${x[n]}`);
  // at another start the rotation differs: unrotating from the wrong position does not give x back
  const wrong = table.unrotate({ data: Float32Array.from(turned), dims: [H, L, d] }, position0 + 1).data;
  assert.ok(wrong.some((v, n) => Math.abs(v - x[n]) > 1e-2));
});
