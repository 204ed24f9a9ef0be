#!/usr/bin/env node
// normgen's command line: one module per command under cli/commands/.

import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { InputError } from '../generator/problem.js';
import { DeviceError } from '../tuner/device.js';
import { ToolchainError } from '../tuner/nvcc.js';
import * as build from './commands/build.js';
import * as check from './commands/check.js';
import * as exporter from './commands/export.js';
import * as generate from './commands/generate.js';
import * as list from './commands/list.js';
import * as merge from './commands/merge.js';
import * as report from './commands/report.js';
import * as tune from './commands/tune.js';
import * as verify from './commands/verify.js';

/** Errors the user can act on: one line, exit code 2. Anything else is a bug: a stack trace. */
const expected = (e: unknown): e is Error => e instanceof InputError || e instanceof ToolchainError || e instanceof DeviceError;

function fail(message: string): never {
  console.error(`normgen: ${message.trim().replace(/\s*\n\s*/g, ' ')}`); // yargs writes some messages over several lines
  process.exit(2);
}

export async function main(argv: string[]): Promise<void> {
  await yargs(argv)
    .scriptName('normgen')
    .strict()
    .command(list.command, list.describe, list.builder, (a) => list.handler(a as never))
    .command(generate.command, generate.describe, generate.builder, (a) => generate.handler(a as never))
    .command(verify.command, verify.describe, verify.builder, (a) => verify.handler(a as never))
    .command(tune.command, tune.describe, tune.builder, (a) => tune.handler(a as never))
    .command(build.command, build.describe, build.builder, (a) => build.handler(a as never))
    .command(report.command, report.describe, report.builder, (a) => report.handler(a as never))
    .command(merge.command, merge.describe, merge.builder, (a) => merge.handler(a as never))
    .command(check.command, check.describe, check.builder, (a) => check.handler(a as never))
    .command(exporter.command, exporter.describe, exporter.builder, (a) => exporter.handler(a as never))
    .demandCommand(1, 'name a command: list, generate, verify, tune, build, report, merge, check, export')
    .fail((msg, err) => {
      if (expected(err)) fail(err.message);
      if (err) throw err;
      fail(msg);
    })
    .help()
    .parseAsync();
}

main(hideBin(process.argv)).catch((e) => {
  if (expected(e)) fail(e.message);
  console.error(e);
  process.exit(1);
});
