// The page's stylesheet (demo/src/style.css): a rule inside @media (a narrow screen's layout) is
// overridden by a rule of the same selector and property written after it outside any @media
// (equal specificity: the later wins), so the narrow layout would silently not apply. Every such
// pair is an error; the phone-width browser test sees only the boxes it measures.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

// Rules in order: { selectors, media (the enclosing @media, or null), properties }.
function cssRules(css) {
  const rules = [], open = [];
  const re = /([^{}]+)\{|\}/g;
  const source = css.replace(/\/\*[\s\S]*?\*\//g, '');
  for (let m; (m = re.exec(source));) {
    if (m[0] === '}') { open.pop(); continue; }
    const head = m[1].trim();
    if (head.startsWith('@')) { open.push(head); continue; }
    const end = source.indexOf('}', re.lastIndex);
    const properties = source.slice(re.lastIndex, end).split(';').map((p) => p.split(':')[0].trim()).filter(Boolean);
    rules.push({ selectors: head.split(',').map((s) => s.trim()), media: open.find((h) => h.startsWith('@media')) ?? null, properties });
    re.lastIndex = end + 1;
  }
  return rules;
}

function overridden(css) {
  const rules = cssRules(css), found = [];
  rules.forEach((r, i) => {
    if (!r.media) return;
    for (const later of rules.slice(i + 1).filter((b) => !b.media)) {
      const selector = r.selectors.find((s) => later.selectors.includes(s));
      const property = selector && r.properties.find((p) => later.properties.includes(p));
      if (property) found.push(`${selector} { ${property} } in ${r.media} is overridden by a later rule outside it`);
    }
  });
  return found;
}

test('the check finds a narrow-screen rule that a later rule overrides', () => {
  const css = '@media (max-width: 700px) { .a, .b { display: block; color: red; } }\n/* c */ .b { color: blue; }\n.a { margin: 0; }';
  assert.deepEqual(overridden(css), ['.b { color } in @media (max-width: 700px) is overridden by a later rule outside it']);
  assert.deepEqual(overridden('.b { color: blue; } @media (max-width: 700px) { .b { color: red; } }'), []);
});

test('demo/src/style.css: no narrow-screen rule is overridden by a later one', () => {
  const css = readFileSync(new URL('../../demo/src/style.css', import.meta.url), 'utf8');
  assert.ok(cssRules(css).filter((r) => r.media).length >= 20, 'the stylesheet was read');
  assert.deepEqual(overridden(css), []);
});
