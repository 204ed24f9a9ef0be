// The fleet re-tuning workflow (.github/workflows/retune.yml): its shape (a tune job per
// GPU label uploading its forward and backward databases, a final job merging, building,
// checking and opening a pull request), and every normgen command it runs is one the CLI
// accepts, with options the command knows.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const wf = parse(readFileSync(`${ROOT}.github/workflows/retune.yml`, 'utf8'));

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
const steps = (job: string): Step[] => wf.jobs[job].steps;
const runs = (job: string) => steps(job).flatMap((s) => (s.run ? [s.run] : []));

/** Every `node dist/cli/main.js ...` invocation in a job, as argument lists (${{ }} and $VARS left as words). */
function normgenCommands(job: string): string[][] {
  const out: string[][] = [];
  for (const script of runs(job))
    for (const line of script.replace(/\\\n/g, ' ').split('\n')) {
      const at = line.indexOf('node dist/cli/main.js ');
      if (at < 0) continue;
      const tail = line.slice(at + 'node dist/cli/main.js '.length).split(/\s*(?:\||&&|;)\s*/)[0];
      out.push(tail.trim().split(/\s+/).map((w) => w.replace(/^"|"$/g, '')));
    }
  return out;
}

test('a tune job per GPU label on self-hosted runners, each uploading its database', () => {
  const tune = wf.jobs.tune;
  const entries: { gpu: string; arch: string }[] = tune.strategy.matrix.include;
  assert.ok(entries.length >= 2, 'at least two GPU models');
  assert.equal(entries.map((e) => e.gpu).sort(), ['h100', 'h200']);
  const labels = entries.map((e) => tune['runs-on'].map((l: string) => l.replace('${{ matrix.gpu }}', e.gpu)));
  assert.equal(labels, [['self-hosted', 'gpu-h100'], ['self-hosted', 'gpu-h200']]);
  const [cmd, bwd] = normgenCommands('tune');
  assert.is(cmd[0], 'tune');
  assert.is(cmd[cmd.indexOf('--db') + 1], 'tuning/$GPU.jsonl');
  assert.is(bwd[0], 'tune');
  assert.is(bwd[bwd.indexOf('--direction') + 1], 'bwd');
  assert.is(bwd[bwd.indexOf('--db') + 1], 'tuning/bwd/$GPU.jsonl');
  const upload = steps('tune').find((s) => s.uses?.startsWith('actions/upload-artifact@'))!;
  assert.ok(upload, 'uploads an artifact');
  assert.match(String(upload.with!.path), /tuning\/\$\{\{ matrix\.gpu \}\}\.jsonl/);
  assert.match(String(upload.with!.path), /tuning\/bwd\/\$\{\{ matrix\.gpu \}\}\.jsonl/);
  assert.is(upload.with!.name, 'tuning-${{ matrix.gpu }}');
  assert.is(tune.strategy['fail-fast'], false, 'one broken runner does not cancel the others');
});

test('the final job downloads, merges, builds, checks and opens a pull request', () => {
  const job = wf.jobs.package;
  assert.is(job.needs, 'tune');
  assert.ok(job['runs-on'].includes('self-hosted'), 'check needs a GPU runner');
  assert.equal(job.permissions, { contents: 'write', 'pull-requests': 'write' });
  assert.equal(wf.permissions, { contents: 'read' }, 'the tune jobs only read');
  const download = steps('package').find((s) => s.uses?.startsWith('actions/download-artifact@'))!;
  assert.is(download.with!.pattern, 'tuning-*');
  assert.is(download.with!['merge-multiple'], true);
  const cmds = normgenCommands('package');
  assert.equal(cmds.map((c) => c[0]), ['merge', 'merge', 'build', 'check']);
  const [merge, mergeBwd, build, check] = cmds;
  const mergedTo = merge[merge.indexOf('--out') + 1];
  const bwdTo = mergeBwd[mergeBwd.indexOf('--out') + 1];
  assert.is(mergeBwd[1], 'tuning/bwd/*.jsonl');
  const buildDbs = build.flatMap((a, i) => (a === '--db' ? [build[i + 1]] : []));
  assert.equal(buildDbs, [mergedTo, bwdTo], 'build reads both merged folders');
  assert.is(check[check.indexOf('--db') + 1], mergedTo, 'check reads the merged folder');
  const pr = steps('package').find((s) => s.run?.includes('gh pr create'))!;
  assert.ok(pr, 'opens a pull request with gh');
  assert.match(pr.env!.GH_TOKEN, /secrets\.GITHUB_TOKEN/);
  assert.match(pr.run!, /git add out\/tuning\/fleet out\/tuning\/fleet-bwd out\/normgen-fleet/);
  assert.match(runs('package').join('\n'), /set -o pipefail/, 'a failing check is not hidden by tee');
});

test('every normgen command in the workflow is one the CLI accepts, with options it knows', () => {
  const all = [...normgenCommands('tune'), ...normgenCommands('package')];
  assert.ok(all.length >= 4);
  for (const [command, ...args] of all) {
    const help = spawnSync(process.execPath, [CLI, command, '--help'], { encoding: 'utf8' });
    assert.is(help.status, 0, `normgen ${command} --help: ${help.stderr}`);
    assert.match(help.stdout, new RegExp(`^normgen ${command}`), `${command} is a command`);
    for (const option of args.filter((a) => a.startsWith('--'))) assert.ok(help.stdout.includes(`${option} `) || help.stdout.includes(`${option}\n`), `normgen ${command} has no option ${option}`);
  }
  // The check works: an unknown command or option is noticed.
  const unknown = spawnSync(process.execPath, [CLI, 'retune', '--help'], { encoding: 'utf8' });
  assert.not.match(unknown.stdout, /^normgen retune/);
  const help = spawnSync(process.execPath, [CLI, 'merge', '--help'], { encoding: 'utf8' }).stdout;
  assert.not.ok(help.includes('--tolerance '), 'merge has no --tolerance');
});

test.run();
