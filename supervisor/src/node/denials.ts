/**
 * Spotting sandbox denials in a run's stderr. Landlock refuses with EACCES and leaves no other trace a
 * process of ours can read (its audit records go to the kernel audit log), so the supervisor reads the
 * tools' own complaints ("Permission denied", EACCES) and keeps those that name a path outside what
 * the run may write. A heuristic, documented as such in docs/security-model.md.
 */
import path from 'node:path';

export interface Denial {
  path: string | null;
  line: string;
}

const MARKERS = [
  Buffer.from('ermission denied'),
  Buffer.from('EACCES'),
  Buffer.from('Read-only file system'),
];
const MARKER_RE = /permission denied|EACCES|read-only file system/i;
const PATH_RE = /(?:^|[\s'"`(:‘])((?:\/|\.\.?\/)[^\s'"`:)’]+)/g;

export class DenialScanner {
  readonly found: Denial[] = [];
  private carry = '';

  constructor(
    /** The tools' working directory, for relative paths in their complaints. */
    private readonly cwd: string,
    private readonly writable: string[],
    private readonly onDenial: (d: Denial) => void,
  ) {}

  scan(chunk: Buffer): void {
    if (this.found.length >= 20) return;
    if (!MARKERS.some((m) => chunk.includes(m))) {
      // The common case: no complaint in this chunk. Keep only the unfinished last line, in case a
      // complaint about it arrives with the next chunk.
      const nl = chunk.lastIndexOf(10);
      const head = nl < 0 ? chunk : chunk.subarray(0, nl);
      if (!(this.carry && MARKER_RE.test(this.carry + head.toString('utf8')))) {
        this.carry = (
          nl < 0 ? this.carry + chunk.toString('utf8') : chunk.subarray(nl + 1).toString('utf8')
        ).slice(-4096);
        return;
      }
    }
    const text = this.carry + chunk.toString('utf8');
    const lines = text.split('\n');
    this.carry = (lines.pop() ?? '').slice(-4096);
    for (const line of lines) {
      if (!MARKER_RE.test(line)) continue;
      // The path a tool complains about stands just before the complaint ("sh: cannot create /x: Permission denied").
      const at = line.search(MARKER_RE);
      const found = [...line.matchAll(PATH_RE)].map((m) => ({ p: m[1]!, i: m.index ?? 0 }));
      const before = found.filter((f) => f.i < at);
      const raw = (before.length ? before[before.length - 1] : found[0])?.p;
      const named = raw === undefined ? undefined : path.resolve(this.cwd, raw); // `a/../../b` names b
      const outside =
        named &&
        !this.writable.some((w) => named === w || named.startsWith(w.endsWith('/') ? w : w + path.sep))
          ? named
          : undefined;
      if (named && !outside) continue; // a denial inside the writable set is not the sandbox's doing
      const d = { path: outside ?? null, line: line.slice(0, 500) };
      this.found.push(d);
      this.onDenial(d);
      if (this.found.length >= 20) return;
    }
  }
}
