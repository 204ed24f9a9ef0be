// The runner client against a runner that exits at once, as the native one does on a
// machine without a usable GPU: every request is answered RUNTIME_ERROR, nothing crashes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Runner } from '../tuner/runner.js';

test('a runner that exits before reading its request: RUNTIME_ERROR, not an EPIPE crash', async () => {
  const runner = new Runner('/bin/true', 0); // exits at once without reading stdin: the request's write breaks the pipe
  for (let i = 0; i < 20; i++) {
    const reply = await runner.request({ cmd: 'info' }, 5000);
    assert.is(reply.status, 'RUNTIME_ERROR');
    assert.match(reply.error ?? '', /runner exited/);
  }
  assert.is(runner.restarts, 19);
});

test.run();
