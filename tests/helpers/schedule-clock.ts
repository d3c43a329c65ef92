/**
 * A schedule clock a test moves (RUNBOARD_SCHEDULE_CLOCK naming a file, supervisor/src/node/
 * schedule-clock.ts): set well before a fire, so the setup has no window of real time to meet, then
 * moved onto the fire once the state the test wants is there. The supervisor looks at once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export class TestClock {
  private readonly dir = mkdtempSync(path.join(os.tmpdir(), 'rb-clock-'));
  /** What RUNBOARD_SCHEDULE_CLOCK is set to. */
  readonly file = path.join(this.dir, 'clock');

  constructor(start: string) {
    writeFileSync(this.file, start);
  }

  /** Moves the clock to `iso` (it runs on at real speed from there). */
  moveTo(iso: string): void {
    writeFileSync(this.file, iso);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
