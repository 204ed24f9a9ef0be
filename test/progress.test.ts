// The progress line's ETA: measured over the last minute, so a slow start does not stretch it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { formatDuration, progressReporter, RATE_WINDOW_S } from '../cli/progress.js';
import { trackProgress, type Progress } from '../tuner/progress.js';

/** A non-terminal stream that keeps what is written. */
function capture(): { stream: NodeJS.WriteStream; lines: string[] } {
  const lines: string[] = [];
  const stream = { isTTY: false, write: (s: string) => lines.push(s.trimEnd()) } as unknown as NodeJS.WriteStream;
  return { stream, lines };
}

test('the ETA follows the recent rate, not the rate since the first measurement', () => {
  const { stream, lines } = capture();
  const report = progressReporter('tune', stream);
  const total = 2000;
  // 100 s at 1 measurement a second (waiting on the compiler), then 10 a second.
  let done = 0;
  for (let t = 1; t <= 100; t++) report({ done: ++done, total, skipped: 0, failures: 0, elapsedS: t });
  for (let t = 101; t <= 100 + 2 * RATE_WINDOW_S; t++) report({ done: (done += 10), total, skipped: 0, failures: 0, elapsedS: t });
  const last = lines[lines.length - 1];
  assert.ok(last.startsWith(`tune: ${done}/${total} measured`), last);
  assert.ok(last.endsWith(`ETA ${formatDuration((total - done) / 10)}`), last); // 700 left at 10/s: 1m10s
});

test("where the work's cost is given, the ETA follows its rate, not the measurements'", () => {
  const { stream, lines } = capture();
  const report = progressReporter('tune', stream);
  // 60 s of cheap measurements (one a second, 2 units each); 940 units remain, of 40 measurements.
  for (let t = 1; t <= RATE_WINDOW_S; t++) report({ done: t, total: 100, skipped: 0, failures: 0, elapsedS: t, work: 1060, workDone: 2 * t });
  const last = lines[lines.length - 1];
  assert.ok(last.startsWith(`tune: ${RATE_WINDOW_S}/100 measured`), last); // the count still shows measurements
  assert.ok(last.endsWith(`ETA ${formatDuration((1060 - 2 * RATE_WINDOW_S) / 2)}`), last); // 940 units at 2/s: 7m50s, not 40 s
});

test('no ETA before a rate exists; a plain line at the end', () => {
  const { stream, lines } = capture();
  const report = progressReporter('tune', stream);
  report({ done: 0, total: 5, skipped: 2, failures: 0, elapsedS: 10 }); // plain lines come every 10 s
  assert.ok(lines[0].endsWith('ETA --') && lines[0].includes('2 already in the database'), lines[0]);
  report({ done: 5, total: 5, skipped: 2, failures: 1, dropped: 2, elapsedS: 13 });
  assert.is(lines.length, 2);
  assert.ok(lines[1].startsWith('tune: 5/5 measured, 1 failed, 2 dropped (registers spill), 2 already'), lines[1]);
});

test('durations round before they split into units', () => {
  assert.is(formatDuration(1019.6), '17m00s');
  assert.is(formatDuration(59.7), '1m00s');
  assert.is(formatDuration(75), '1m15s');
  assert.is(formatDuration(3 * 3600 + 5 * 60), '3h05m');
});

test("a tune's progress: reported at the start and on every first-stage measurement, failures and work counted", () => {
  const seen: Progress[] = [];
  const t = trackProgress({ total: 3, skipped: 2, work: 10 }, (p) => seen.push({ ...p }));
  assert.equal(seen, [{ done: 0, failures: 0, dropped: 0, elapsedS: seen[0].elapsedS, workDone: 0, total: 3, skipped: 2, work: 10 }]);
  t.counted({ status: 'OK' });
  t.worked(1.5);
  t.counted({ status: 'INCORRECT' });
  t.worked(5.5); // a final: work, not a count
  t.counted({ status: 'SPILLS' }); // dropped by design: not a failure
  assert.is(seen.length, 4);
  assert.equal([seen[3].done, seen[3].failures, seen[3].dropped], [3, 1, 1]);
  assert.is(t.progress.workDone, 7);
  assert.ok(seen.every((p, i) => i === 0 || p.elapsedS >= seen[i - 1].elapsedS));
});

test.run();
