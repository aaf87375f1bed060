// The C floor of bench api's fd-message loop (native benchFdMessages): it really passes fds
// (an fd that cannot be passed fails the run with the errno), runs off the JS thread and
// leaves nothing behind.
import { describe, expect, it } from 'vitest';
import { openSync, closeSync } from 'node:fs';
import { native, projectRoot } from '../src/native.js';
import { openFdCount, settledLiveObjects, zeroLiveObjects } from './support/leaks.js';

describe('benchFdMessages', () => {
  it('passes fds for about the given time and closes every fd it received', async () => {
    const fdsBefore = openFdCount();
    const passed = openSync(`${projectRoot}/readv.c`, 'r');
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5); // the JS thread stays free while it runs
    const r = await native.benchFdMessages(passed, 100);
    clearInterval(timer);
    closeSync(passed);
    expect(r.messages).toBeGreaterThan(1000);
    expect(r.seconds).toBeGreaterThanOrEqual(0.1);
    expect(ticks).toBeGreaterThan(0);
    expect(openFdCount()).toBe(fdsBefore);
    expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  });

  it('rejects with the errno when the fd cannot be passed', async () => {
    await expect(native.benchFdMessages(987654, 10)).rejects.toMatchObject({ code: 'EBADF', syscall: 'sendmsg' });
    expect(() => native.benchFdMessages(-1, 10)).toThrow(RangeError);
    expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  });
});
