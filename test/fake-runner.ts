// A stand-in for the native bench runner, speaking its JSON-lines protocol, so the
// tuner's loop, database, resume and fault handling are tested without a GPU.
// Times are a deterministic function of the launch; FAKE_CRASH / FAKE_HANG /
// FAKE_WRONG name kernel symbols (comma-separated) that fault, hang or compute wrong;
// FAKE_SCALE=symbol:factor,... makes those kernels slower (> 1) or faster (< 1);
// FAKE_ALIAS=symbol:factor,... scales their time when asked to alias weight and bias
// (affineAlias: both placements are reported, the slower as the median);
// FAKE_LATE=symbol:factor,... scales their time when asked to compare release points and
// releasing late (compareRelease, with programmatic launch: both reported, the faster as the median);
// FAKE_EXIT=symbol:factor,... the same for releasing at exit (compareExit);
// compareSymbol (plain launches: a kernel's twin or the kernel itself) is timed like the kernel,
// FAKE_SCALE applying to each symbol; the faster is the median (timedUs, comparedUs, compared);
// FAKE_LOG=file appends every run request's timing fields to that file.
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const list = (name: string) => new Set((process.env[name] ?? '').split(',').filter(Boolean));
const crash = list('FAKE_CRASH');
const hang = list('FAKE_HANG');
const wrong = list('FAKE_WRONG');
const factors = (name: string) => new Map([...list(name)].map((e) => [e.split(':')[0], Number(e.split(':')[1])]));
const scale = factors('FAKE_SCALE');
const aliasScale = factors('FAKE_ALIAS');
const lateScale = factors('FAKE_LATE');
const exitScale = factors('FAKE_EXIT');
const programmatic = () => process.env.NORMGEN_PDL !== '0';
const say = (o: object) => process.stdout.write(JSON.stringify(o) + '\n');

createInterface({ input: process.stdin }).on('line', (line) => {
  const req = JSON.parse(line);
  if (req.cmd === 'info') {
    say({ status: 'OK', name: 'Fake GPU', major: 9, minor: 0, sms: 132, memoryBytes: 80e9, l2Bytes: 50e6, driver: 13000, runtime: 13000, driverVersion: 'fake 1.0', uuid: 'fake', programmaticLaunch: programmatic() });
  } else if (req.cmd === 'copy') {
    say({ status: 'OK', gbps: 4000 + 100 * Number(process.env.CUDA_VISIBLE_DEVICES ?? 0) }); // cards differ a little
  } else if (req.cmd === 'run') {
    if (process.env.FAKE_LOG) appendFileSync(process.env.FAKE_LOG, JSON.stringify({ symbol: req.symbol, rows: req.rows, samples: req.samples, maxCopies: req.maxCopies, chainLaunches: req.chainLaunches, affineAlias: req.affineAlias, compareRelease: req.compareRelease, compareExit: req.compareExit, compareSymbol: req.compareSymbol }) + '\n');
    if (hang.has(req.symbol)) return; // never answers
    if (crash.has(req.symbol)) {
      say({ status: 'RUNTIME_ERROR', error: 'an illegal memory access was encountered' });
      process.exit(3);
    }
    const base = 5 + ((req.block * 7 + req.grid + req.smem) % 97) / 10;
    const timed = base * (scale.get(req.symbol) ?? 1);
    const other = req.compareSymbol && !programmatic() ? base * (scale.get(req.compareSymbol) ?? 1) : undefined;
    const us = Math.min(timed, other ?? timed);
    const compared = other === undefined ? {} : { timedUs: timed, comparedUs: other, ...(other < timed ? { compared: true } : {}) };
    if (wrong.has(req.symbol)) say({ status: 'INCORRECT', err_y: 3, bad_y: 1, medianUs: us / 10 });
    else if (other !== undefined && wrong.has(req.compareSymbol)) say({ status: 'INCORRECT', err_y: 3, bad_y: 1, compared: true, verified: true });
    else {
      const aliased = req.affineAlias ? us * (aliasScale.get(req.symbol) ?? 1) : undefined;
      const start = Math.max(us, aliased ?? us);
      const placements = aliased === undefined ? {} : { usualUs: us, aliasedUs: aliased };
      const late = req.compareRelease && programmatic() ? start * (lateScale.get(req.symbol) ?? 1) : undefined;
      const exit = req.compareExit && programmatic() ? start * (exitScale.get(req.symbol) ?? 1) : undefined;
      const t = Math.min(start, late ?? start, exit ?? start);
      const releases = late === undefined && exit === undefined ? {} : {
        releaseStartUs: start,
        ...(late === undefined ? {} : { releaseLateUs: late }),
        ...(exit === undefined ? {} : { releaseExitUs: exit }),
        ...(t < start && t === late ? { release: 'late' } : t < start && t === exit ? { release: 'exit' } : {}),
      };
      say({ status: 'OK', err_y: 0.1, medianUs: t, minUs: t, maxUs: t, samplesUs: [t], ...placements, ...releases, ...compared, verified: true });
    }
  } else if (req.cmd === 'quit') {
    process.exit(0);
  }
});
