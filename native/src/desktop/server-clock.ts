// The X server's clock (ms, its own epoch) on the local one (Date.now()), for a recording's step times:
// a step's time is when it happened, not when the recorder read it (decision 135).

/**
 * Every sample bounds the offset from above: an event reaches here after it happened, and a mark's or a
 * pause's instant is before its call returned. The smallest bound is the offset, and it is fixed by the
 * first time asked for: an offset that tightened between two steps' writes put a later step before an
 * earlier one (CI: a click at 29 ms after a key at 27). The first bound is a mark taken as the recording
 * starts, so a recorder behind at its first step does not shift every time by its lag.
 */
export class ServerClock {
  private bound = Infinity;
  private fixed: number | undefined;

  /** Server instant `time` was no later than local instant `local` (server time 0: not known). */
  observe(local: number, time: number): void {
    if (time > 0) this.bound = Math.min(this.bound, local - time);
  }

  /** Server instant `time` on the local clock; undefined while no sample came. */
  toLocal(time: number): number | undefined {
    if (this.fixed === undefined && Number.isFinite(this.bound)) this.fixed = this.bound;
    return this.fixed === undefined ? undefined : time + this.fixed;
  }
}
