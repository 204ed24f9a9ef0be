import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseArch } from '../generator/arch.js';
import { allFeatureCombos, makeProblem } from '../generator/problem.js';
import { renderPackageUnit } from '../generator/render-cuda.js';
import { enumerateSpace } from '../generator/space.js';
import { TEMPLATE_ROOT } from '../generator/templates.js';
import { makeVariant } from '../generator/variant.js';
import { reboundTwins, SPLICED, spliceHeader, tunedVariants } from './gpu/splice-partials.js';
import { H100_COMMITTED } from './paths.js';

const problem = makeProblem({ op: 'rmsnorm', dtype: 'bf16', features: allFeatureCombos().find((f) => f.weight === 'same' && f.residual === 'none' && !f.bias && !f.stats && !f.weightOffset)! }, 16384, 2048);
const variants = enumerateSpace(problem, parseArch('sm90')).map((params) => makeVariant(problem, params)).filter((v) => v.params.threads === 512 && !v.params.registerCap);
const bounds = (unit: string, symbol: string) => new RegExp(`__launch_bounds__\\((\\d+), (\\d+)\\)\n${symbol}\\(`).exec(unit)?.slice(1);

test("twins re-bounded from the registers their unit was built with move nowhere", () => {
  const unit = renderPackageUnit(problem, variants, new Map(variants.map((v) => [v.id, 62])));
  const r = reboundTwins(unit, new Map(variants.map((v) => [v.symbol, 62])), new Set(variants.map((v) => v.id)));
  assert.is(r.moved.length, 0);
  assert.is(r.unit, unit);
});

test("a twin follows its kernel's new registers where the tune recorded them, and only there", () => {
  assert.ok(variants.length >= 2, `${variants.length} variants`);
  const unit = renderPackageUnit(problem, variants, new Map(variants.map((v) => [v.id, 62])));
  const [untuned, ...tuned] = variants;
  const r = reboundTwins(unit, new Map(variants.map((v) => [v.symbol, 72])), new Set(tuned.map((v) => v.id)));
  assert.is(r.moved.length, tuned.length);
  for (const v of tuned) {
    assert.equal(bounds(r.unit, `${v.symbol}_plain`), ['512', '1'], `${v.symbol}: 72 registers allow one CTA of 512`);
    assert.equal(bounds(r.unit, v.symbol), ['512', '1'], `${v.symbol}: the kernel's own bounds stay`);
  }
  assert.equal(bounds(r.unit, `${untuned.symbol}_plain`), ['512', '2'], 'a twin the tune had no registers for keeps its bound');
  assert.equal(r.moved[0], { symbol: `${tuned[0].symbol}_plain`, threads: 512, registers: 72, from: 2, to: 1 });
  assert.throws(() => reboundTwins(unit, new Map(), new Set(tuned.map((v) => v.id))), /no registers/);
});

test("the tuned variants are the entries', their portable fallbacks' and the plain table's that carry registers", () => {
  const ids = tunedVariants([
    { arch: 'sm90', entries: [{ variantId: 'a', registers: 40, portable: { variantId: 'b', registers: 32 } }, { variantId: 'c' }], plain: { entries: [{ variantId: 'd', registers: 30 }] } },
  ]);
  assert.equal([...ids].sort(), ['a', 'b', 'd']);
});

test('a committed package holds the spliced partials verbatim, and a header that does not is refused', () => {
  for (const s of SPLICED) {
    const header = readFileSync(join(H100_COMMITTED, 'src', s.header), 'utf8');
    const partial = readFileSync(join(TEMPLATE_ROOT, s.partial), 'utf8');
    const spliced = spliceHeader(s.header, header, partial, `${partial}// changed\n`);
    assert.ok(spliced.startsWith(header.split('\n').slice(0, 3).join('\n') + '\n'), s.header);
    assert.ok(spliced.endsWith(`${partial}// changed\n`), s.header);
    assert.throws(() => spliceHeader(s.header, header, partial.replace('}', '} '), partial), /re-tune/);
  }
});

test.run();
