// A recording's pauses that the recorder has not reached yet (decision 123). A pause takes effect at an
// instant of the X server (decision 120); input the person made just before it may still be on its way
// here when pause() returns (a recorder running behind). Until the recorder says it reached the
// instant (types.ts `onPaused`, in the order of the input), the steps before the pause are not ended,
// and what the person adds while paused (an extract, a note) waits behind them. After a Ctrl+I nothing
// after the key is recorded until then, however late the recorder reads it.

/** A pause asked for: what was added while it waited for the recorder. */
export interface PendingPause {
  /** Local time (Date.now()) when the recorder's pause() returned: its instant was before it. */
  returned: number;
  /** The server time of the Ctrl+I that asked for it. */
  keyAt?: number;
  added: (() => void)[];
}

export class PendingPauses {
  private readonly pending: PendingPause[] = [];

  /** A pause was asked for; `returned`: Date.now() right after the recorder's pause() returned. */
  asked(returned: number): void {
    this.pending.push({ returned, added: [] });
  }

  /**
   * A Ctrl+I at server time `keyAt` asked for the newest pause (or came before one asked for already and
   * not reached: it is before that one's instant too).
   */
  byKey(keyAt: number): void {
    const p = this.pending.at(-1);
    if (p) p.keyAt ??= keyAt;
  }

  /** Whether an event at server time `time` came after a Ctrl+I whose pause is not reached yet. */
  afterKey(time: number): boolean {
    return this.pending.some((p) => p.keyAt !== undefined && time >= p.keyAt);
  }

  /** What the person adds: after the steps made before the newest pause not reached yet; else now. */
  add(f: () => void): void {
    const p = this.pending.at(-1);
    if (p) p.added.push(f);
    else f();
  }

  /** The recorder reached the oldest pause's instant: that pause. */
  reached(): PendingPause | undefined {
    return this.pending.shift();
  }

  /** The pauses the recorder will not reach (it stopped first), oldest first. */
  left(): PendingPause[] {
    return this.pending.splice(0);
  }
}
