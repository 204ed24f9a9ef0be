// The HTML report of the committed H200 database, rendered by headless Chromium.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { TuningDb } from '../tuner/db.js';
import { decodePng } from './png.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'normgen-report-'));
const html = join(dir, 'report.html');
const DB = join(ROOT, 'out/tuning/sm90-h200.jsonl.gz');
execFileSync(process.execPath, [join(ROOT, 'dist/cli/main.js'), 'report', '--db', DB, '--out', html]);

test('the page holds a line chart and a winner map per kernel spec, and a status chart', () => {
  const text = readFileSync(html, 'utf8');
  const results = TuningDb.read(DB).results;
  const specs = new Set(results.map((r) => r.problemKey.replace(/\.h\d+\.r\d+$/, '')));
  const problems = new Set(results.map((r) => r.problemKey));
  assert.is((text.match(/class="chart line-chart"/g) ?? []).length, specs.size);
  assert.is((text.match(/class="chart heat-map"/g) ?? []).length, specs.size);
  assert.is((text.match(/<rect [^>]*><title>hidden/g) ?? []).length, problems.size, 'one cell per tuned problem');
  assert.match(text, new RegExp(`INCORRECT ${results.filter((r) => r.status === 'INCORRECT').length}\\b`));
});

test('headless Chromium renders the charts', () => {
  const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find(existsSync);
  assert.ok(chromium, 'Chromium is needed (Debian package chromium; .ci/run installs it)');
  const png = join(dir, 'report.png');
  execFileSync(chromium!, ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
    `--user-data-dir=${mkdtempSync(join(tmpdir(), 'normgen-chromium-'))}`, '--window-size=1400,2400', `--screenshot=${png}`, pathToFileURL(html).href], { stdio: 'pipe', timeout: 120_000 });
  const img = decodePng(readFileSync(png));
  assert.is(img.width, 1400);
  // Count pixels of the first series colour (#1f77b4) and of the winner map's greens.
  let blue = 0, green = 0;
  for (let i = 0; i < img.pixels.length; i += 4) {
    const [r, g, b] = [img.pixels[i], img.pixels[i + 1], img.pixels[i + 2]];
    if (Math.abs(r - 0x1f) < 12 && Math.abs(g - 0x77) < 12 && Math.abs(b - 0xb4) < 12) blue++;
    if (g > 150 && r < 120 && b < 120) green++;
  }
  assert.ok(blue > 500, `line charts drawn (${blue} series pixels)`);
  assert.ok(green > 5000, `winner maps drawn (${green} green pixels)`);
});

test.run();
