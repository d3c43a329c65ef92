/**
 * The usual preamble of a computer-use test file, once: a CuHarness started before its tests, the
 * form apps closed after each test, everything stopped after all. Apart from cu-harness.ts because
 * the benchmarks bundle that one, and vitest is not theirs to carry.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { CuHarness } from './cu-harness.ts';

/** Registers the hooks; `set` receives the harness once started (`opts` as CuHarness.start). */
export function useCuHarness(
  set: (t: CuHarness) => void,
  opts?: Parameters<typeof CuHarness.start>[0],
): void {
  let t: CuHarness | undefined;
  beforeAll(async () => {
    t = await CuHarness.start(opts);
    set(t);
  });
  afterEach(async () => {
    await t?.closeForms();
  });
  afterAll(async () => {
    await t?.stop();
  });
}
