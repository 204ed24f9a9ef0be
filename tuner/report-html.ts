// `normgen report`: a static HTML page with SVG charts of a tuning database: winner
// bandwidth against hidden size per kernel spec, a map of winners over hidden x rows
// coloured by fraction of copy bandwidth, and measurements by status.

import { specKey } from '../generator/problem.js';
import { describeAny } from './direction.js';
import { render } from '../generator/templates.js';
import type { TuningDb } from './db.js';
import { winners, type Winner } from './select.js';

const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];
const round = (v: number) => Math.round(v * 10) / 10;
const sizeLabel = (n: number) => (n >= 1024 && n % 1024 === 0 ? `${n / 1024}K` : String(n));

function groupBySpec(ws: Winner[]): Map<string, Winner[]> {
  const by = new Map<string, Winner[]>();
  for (const w of ws) by.set(specKey(w.problem), [...(by.get(specKey(w.problem)) ?? []), w]);
  return new Map([...by].sort(([a], [b]) => a.localeCompare(b)));
}

function lineChart(title: string, ws: Winner[], copyGbps: number) {
  const [width, height, left, right, top, bottom] = [460, 260, 48, 400, 12, 220];
  const hiddens = [...new Set(ws.map((w) => w.problem.hidden))].sort((a, b) => a - b);
  const lx = (h: number) => Math.log2(h);
  const [x0, x1] = [lx(hiddens[0]), lx(hiddens[hiddens.length - 1])];
  const x = (h: number) => round(x1 === x0 ? (left + right) / 2 : left + ((lx(h) - x0) / (x1 - x0)) * (right - left));
  const yMax = Math.max(copyGbps, ...ws.map((w) => w.best.gbps ?? 0)) * 1.05;
  const y = (gbps: number) => round(bottom - (gbps / yMax) * (bottom - top));
  const rowsList = [...new Set(ws.map((w) => w.problem.rows))].sort((a, b) => a - b);
  const series = rowsList.map((rows, i) => {
    const pts = ws.filter((w) => w.problem.rows === rows).sort((a, b) => a.problem.hidden - b.problem.hidden);
    const points = pts.map((w) => ({
      x: x(w.problem.hidden),
      y: y(w.best.gbps ?? 0),
      tip: `hidden ${w.problem.hidden}, rows ${rows}: ${(w.best.gbps ?? 0).toFixed(0)} GB/s, ${(100 * (w.best.fractionOfCopy ?? 0)).toFixed(1)}% of copy, ${describeAny(w.problem, w.best.params)}`,
    }));
    const last = points[points.length - 1];
    return { label: `rows ${rows}`, color: COLORS[i % COLORS.length], d: points.map((p, j) => `${j ? 'L' : 'M'}${p.x},${p.y}`).join(' '), points, labelX: last?.x ?? right, labelY: last?.y ?? top };
  });
  const yTicks = [0, 0.25, 0.5, 0.75, 1].map((f) => ({ y: y(f * yMax), label: `${(f * yMax).toFixed(0)}` }));
  return { title, width, height, left, right, bottom, textX: left - 4, axisY: bottom, copyY: y(copyGbps), series, yTicks, xTicks: hiddens.map((h) => ({ x: x(h), label: sizeLabel(h) })) };
}

/** Red (0%) through yellow to green (100% of copy bandwidth). */
function colorFor(fraction: number): string {
  const f = Math.max(0, Math.min(1, fraction));
  const hue = Math.round(120 * f);
  return `hsl(${hue}, 70%, ${f > 0.9 ? 45 : 60}%)`;
}

function heatMap(title: string, ws: Winner[]) {
  const hiddens = [...new Set(ws.map((w) => w.problem.hidden))].sort((a, b) => a - b);
  const rowsList = [...new Set(ws.map((w) => w.problem.rows))].sort((a, b) => a - b);
  const [cw, ch, left, top] = [88, 26, 80, 20];
  const cells = ws.map((w) => {
    const c = hiddens.indexOf(w.problem.hidden);
    const r = rowsList.indexOf(w.problem.rows);
    const f = w.best.fractionOfCopy ?? 0;
    return {
      x: left + c * cw, y: top + r * ch, w: cw - 2, h: ch - 2, fill: colorFor(f),
      tx: left + c * cw + cw / 2, ty: top + r * ch + ch / 2 + 4,
      label: `${(100 * f).toFixed(0)}% ${w.best.params.storage}`,
      tip: `hidden ${w.problem.hidden}, rows ${w.problem.rows}: ${describeAny(w.problem, w.best.params)}, ${(100 * f).toFixed(1)}% of copy`,
    };
  });
  return {
    title,
    width: left + hiddens.length * cw + 8,
    height: top + rowsList.length * ch + 8,
    cells,
    rowLabels: rowsList.map((r, i) => ({ x: left - 6, y: top + i * ch + ch / 2 + 4, label: `rows ${r}` })),
    colLabels: hiddens.map((h, i) => ({ x: left + i * cw + cw / 2, y: top - 6, label: sizeLabel(h) })),
  };
}

function statusChart(db: TuningDb) {
  // OK and INCORRECT always show, zero included: "no wrong result" is worth a bar.
  const counts = new Map<string, number>([['OK', 0], ['INCORRECT', 0]]);
  for (const r of db.results) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  const entries = [...counts].sort(([a], [b]) => a.localeCompare(b));
  const max = Math.max(1, ...entries.map(([, n]) => n));
  const bars = entries.map(([label, count], i) => {
    const w = Math.max(1, round((Math.log10(count + 1) / Math.log10(max + 1)) * 300));
    return { label, count, x: 110, y: 8 + i * 24, w, h: 18, fill: label === 'OK' ? '#2ca02c' : '#d62728', tx: 110 + w, ty: 8 + i * 24 + 13 };
  });
  return { width: 560, height: 16 + entries.length * 24, bars };
}

export function reportHtml(db: TuningDb): string {
  const ws = winners(db);
  const session = db.sessions[db.sessions.length - 1];
  const copyGbps = session?.copyGbps ?? 0;
  const bySpec = groupBySpec(ws);
  return render('report', 'report.html.hbs', {
    device: db.header.device.name,
    arch: db.header.arch,
    copyGbps: copyGbps.toFixed(0),
    summary: `${ws.length} problems, ${db.results.length} measurements; last session ${session?.started ?? 'none'}: ${session?.command ?? ''}`,
    lineCharts: [...bySpec].map(([key, list]) => lineChart(key, list, copyGbps)),
    heatMaps: [...bySpec].map(([key, list]) => heatMap(key, list)),
    statusChart: statusChart(db),
  });
}
