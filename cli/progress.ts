// Progress for long work: a bar with ETA on a terminal, a plain line every few
// seconds otherwise (CI logs).

import type { Progress } from '../tuner/progress.js';

/** Seconds of recent progress the ETA's rate is measured over. */
export const RATE_WINDOW_S = 60;

export function progressReporter(label: string, stream: NodeJS.WriteStream = process.stderr): (p: Progress) => void {
  let lastPlain = 0;
  // The rate over the last minute of measurements: a tune's first minutes wait on the
  // compiler, and a rate since the first measurement kept the ETA several times too long
  // for most of the tune (36 minutes shown with 8 left, H200 default grid).
  // Where the tuner gives the work's cost (work, workDone), the rate is of that cost, not of
  // measurements: a tiny problem's final or a huge problem's screening costs several
  // screenings of a small one.
  const samples: { done: number; at: number }[] = [];
  return (p) => {
    const finished = p.done >= p.total;
    const [done, total] = p.work !== undefined && p.workDone !== undefined ? [p.workDone, p.work] : [p.done, p.total];
    const last = samples[samples.length - 1];
    if (done > 0 && (!last || p.elapsedS - last.at >= 1)) samples.push({ done, at: p.elapsedS });
    while (samples.length > 2 && p.elapsedS - samples[1].at >= RATE_WINDOW_S) samples.shift();
    const oldest = samples[0];
    const rate = oldest && done > oldest.done && p.elapsedS > oldest.at ? (done - oldest.done) / (p.elapsedS - oldest.at) : 0;
    const eta = rate > 0 ? Math.max(0, total - done) / rate : NaN;
    const etaText = Number.isFinite(eta) ? `ETA ${formatDuration(eta)}` : 'ETA --';
    const skipped = p.skipped > 0 ? `, ${p.skipped} already in the database` : '';
    const dropped = p.dropped ? `, ${p.dropped} dropped (registers spill)` : '';
    const text = `${label}: ${p.done}/${p.total} measured, ${p.failures} failed${dropped}${skipped}, ${formatDuration(p.elapsedS)} elapsed, ${etaText}`;
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

export function formatDuration(seconds: number): string {
  // Round once, before splitting into units: 1019.6 s is 17m00s, not 16m60s.
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
