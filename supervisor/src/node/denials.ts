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
const PATH_RE = /(?:^|[\s'"`(:])(\/[^\s'"`:)]+)/g;

export class DenialScanner {
  readonly found: Denial[] = [];
  private carry = '';

  constructor(
    private readonly writable: string[],
    private readonly onDenial: (d: Denial) => void,
  ) {}

  scan(chunk: Buffer): void {
    if (this.found.length >= 20) return;
    if (!MARKERS.some((m) => chunk.includes(m)) && !this.carry) return;
    const text = this.carry + chunk.toString('utf8');
    const lines = text.split('\n');
    this.carry = (lines.pop() ?? '').slice(-4096);
    for (const line of lines) {
      if (!/permission denied|EACCES|read-only file system/i.test(line)) continue;
      const paths = [...line.matchAll(PATH_RE)].map((m) => m[1]!);
      const outside = paths.find(
        (p) => !this.writable.some((w) => p === w || p.startsWith(w.endsWith('/') ? w : w + path.sep)),
      );
      if (paths.length > 0 && !outside) continue; // a denial inside the writable set is not the sandbox's doing
      const d = { path: outside ?? null, line: line.slice(0, 500) };
      this.found.push(d);
      this.onDenial(d);
      if (this.found.length >= 20) return;
    }
  }
}
