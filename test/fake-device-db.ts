// Databases of GPUs this machine does not have, made from the committed H200 database:
// another device in the header, a chosen subset of the results, and times perturbed per
// variant (deterministically) so that other variants win.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { readDbText, type DbHeader, type DbLine, type DbResult } from '../tuner/db.js';
import type { DeviceId } from '../tuner/device.js';

export interface FakeDevice {
  device: Partial<DeviceId>;
  arch?: string;
  /** Scale each variant's times by a factor in [1 - spread, 1 + spread] (0: unchanged). */
  spread?: number;
  keep?: (r: DbResult) => boolean;
  /** Sessions timed so (plain: as `tune` under NORMGEN_PDL=0 records them, the plain twins timed). */
  launch?: 'programmatic' | 'plain';
}

const factor = (variantId: string, spread: number) => 1 - spread + (2 * spread * createHash('sha256').update(variantId).digest().readUInt32BE(0)) / 2 ** 32;

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
      }
      out.push(r);
    } else if (line.kind === 'session' && o.launch) {
      const { chainLaunches: _, ...session } = line;
      out.push(o.launch === 'plain' ? { ...session, launch: 'plain', plainTwins: true } : { ...line, launch: 'programmatic' });
    } else out.push(line);
  }
  writeFileSync(target, out.map((l) => JSON.stringify(l)).join('\n') + '\n');
}
