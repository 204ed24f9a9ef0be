// Databases of GPUs this machine does not have, made from the committed H200 database:
// another device in the header, a chosen subset of the results, and times perturbed per
// variant (deterministically) so that other variants win.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { readDbText, type DbHeader, type DbLine, type DbResult } from '../tuner/db.js';
import type { DeviceId } from '../tuner/device.js';
import type { PlainLaunch } from '../tuner/measure.js';

export interface FakeDevice {
  device: Partial<DeviceId>;
  arch?: string;
  /** Scale each variant's times by a factor in [1 - spread, 1 + spread] (0: unchanged). */
  spread?: number;
  keep?: (r: DbResult) => boolean;
  /**
   * Sessions timed so (plain: as `tune` under NORMGEN_PDL=0 records them, the plain twins timed,
   * and each final's twin and kernel both: the faster, made up per variant and problem, as plainLaunch).
   */
  launch?: 'programmatic' | 'plain';
}

/** The made-up faster kernel of a plain final (the other one 5% slower). */
const fakePlainLaunch = (r: DbResult): PlainLaunch => (hashOf(`${r.problemKey} ${r.variantId}`) % 3 === 0 ? 'kernel' : 'twin');

const hashOf = (text: string) => createHash('sha256').update(text).digest().readUInt32BE(0);
const factor = (variantId: string, spread: number) => 1 - spread + (2 * spread * hashOf(variantId)) / 2 ** 32;

export function fakeDeviceDb(source: string, target: string, o: FakeDevice): void {
  const lines = readDbText(source).trim().split('\n').map((l) => JSON.parse(l) as DbLine);
  const out: DbLine[] = [];
  for (const line of lines) {
    if (line.kind === 'header') {
      const h: DbHeader = { ...line, arch: o.arch ?? line.arch, device: { ...line.device, ...o.device, arch: o.arch ?? line.device.arch } };
      out.push(h);
    } else if (line.kind === 'result') {
      if (o.keep && !o.keep(line)) continue;
      const f = factor(line.variantId, o.spread ?? 0);
      const r: DbResult = { ...line };
      if (typeof r.medianUs === 'number') {
        r.medianUs *= f;
        if (r.minUs !== undefined) r.minUs *= f;
        if (r.maxUs !== undefined) r.maxUs *= f;
        if (r.gbps !== undefined) r.gbps /= f;
        if (r.fractionOfCopy !== undefined) r.fractionOfCopy /= f;
        if (o.launch === 'plain' && r.stage === 'final' && r.status === 'OK') {
          r.plainLaunch = fakePlainLaunch(r);
          [r.twinUs, r.kernelUs] = r.plainLaunch === 'twin' ? [r.medianUs, r.medianUs * 1.05] : [r.medianUs * 1.05, r.medianUs];
        }
      }
      out.push(r);
    } else if (line.kind === 'session' && o.launch) {
      const { chainLaunches: _, ...session } = line;
      out.push(o.launch === 'plain' ? { ...session, launch: 'plain', plainTwins: true, plainCompared: true } : { ...line, launch: 'programmatic' });
    } else out.push(line);
  }
  writeFileSync(target, out.map((l) => JSON.stringify(l)).join('\n') + '\n');
}
