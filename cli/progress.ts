// Progress for long work: a bar with ETA on a terminal, a plain line every few
// seconds otherwise (CI logs).

import type { Progress } from '../tuner/tune.js';

export function progressReporter(label: string, stream: NodeJS.WriteStream = process.stderr): (p: Progress) => void {
  let lastPlain = 0;
  // The rate counts from the first measurement, so compile time up front does not skew the ETA.
  let origin: { done: number; at: number } | undefined;
  return (p) => {
    const finished = p.done >= p.total;
    if (!origin && p.done > 0) origin = { done: p.done, at: p.elapsedS };
    const rate = origin && p.done > origin.done ? (p.done - origin.done) / (p.elapsedS - origin.at) : 0;
    const eta = rate > 0 ? (p.total - p.done) / rate : NaN;
    const etaText = Number.isFinite(eta) ? `ETA ${formatDuration(eta)}` : 'ETA --';
    const skipped = p.skipped > 0 ? `, ${p.skipped} already in the database` : '';
    const text = `${label}: ${p.done}/${p.total} measured, ${p.failures} failed${skipped}, ${formatDuration(p.elapsedS)} elapsed, ${etaText}`;
    if (stream.isTTY) {
      const width = 30;
      const filled = p.total ? Math.round((width * p.done) / p.total) : width;
      stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${text}\x1b[K${finished ? '\n' : ''}`);
    } else if (finished || p.elapsedS - lastPlain >= 10) {
      lastPlain = p.elapsedS;
      stream.write(text + '\n');
    }
  };
}

export function formatDuration(s: number): string {
  if (s < 60) return `${s.toFixed(0)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
