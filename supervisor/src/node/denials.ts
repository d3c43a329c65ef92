/**
 * Spotting sandbox denials in a run's stderr. Landlock refuses with EACCES and leaves no other trace a
 * process of ours can read (its audit records go to the kernel audit log), so the supervisor reads the
 * tools' own complaints ("Permission denied", EACCES) and keeps those that name a path outside what
 * the run may write. A heuristic, documented as such in docs/security-model.md.
 */
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';

export interface Denial {
  path: string | null;
  line: string;
  /** A TCP port the run was refused a connection to (the path is null then). */
  port?: number;
  /** A delete inside the workspace, refused because the flow asks for deletes (`sandbox.askDeletes`). */
  remove?: true;
  /** Where the complaint came from: the run's stderr, or an agent CLI's own permission refusal. */
  source?: 'agent';
}

const MARKERS = [
  Buffer.from('ermission denied'),
  Buffer.from('EACCES'),
  Buffer.from('Read-only file system'),
  Buffer.from('No such file'),
  Buffer.from('nonexistent'),
  Buffer.from('ENOENT'),
];
const MARKER_RE =
  /permission denied|EACCES|read-only file system|no such file or directory|directory nonexistent|ENOENT/i;
/** A refusal proper; "no such file" is one only where a folder outside the allow-list is absent for the run. */
const REFUSED_RE = /permission denied|EACCES|read-only file system/i;
const PATH_RE = /(?:^|[\s'"`(:‘])((?:\/|\.\.?\/)[^\s'"`:)’]+)/g;
/** A quoted name ("rm: cannot remove 'build/a.o'"): a relative path without ./ when no other path is named. */
const QUOTED_RE = /['‘]([^\s'’]+)['’]/g;
/** A refused TCP connect as tools report it: Node's `connect EACCES 127.0.0.1:5432`, curl's `port 5432`. */
const PORT_RE = /connect EACCES \[?[0-9a-fA-F.:]*?\]?:(\d{1,5})\b|\bport (\d{1,5})\b/;
/** A refused delete (rm, rmdir, unlink, Node's EACCES on unlink/rmdir/rename). */
const REMOVE_RE = /cannot remove|failed to remove|\b(?:unlink|rmdir|rename)\b/i;

export class DenialScanner {
  readonly found: Denial[] = [];
  private carry = '';

  constructor(
    /** The tools' working directory, for relative paths in their complaints. */
    private readonly cwd: string,
    private readonly writable: string[],
    private readonly onDenial: (d: Denial) => void,
    /** The flow withholds deletes in the workspace (`sandbox.askDeletes`): a refused delete there counts. */
    private readonly askDeletes = false,
    /**
     * The trees the run sees (its readable and writable ones), when reads are an allow-list: a "no such
     * file" about a path whose folder exists here but is hidden from the run is a denial too.
     */
    private readonly visible?: () => readonly string[] | undefined,
  ) {}

  /** One complaint of an agent CLI's own permission system (a worker log event), scanned like stderr. */
  scanAgent(text: string): void {
    if (this.found.length >= 20) return;
    const line = text.replace(/[\r\n]+/g, ' ');
    this.judge(MARKER_RE.test(line) ? line : `${line}: permission denied`, 'agent');
  }

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
      this.judge(line);
      if (this.found.length >= 20) return;
    }
  }

  private judge(line: string, source?: 'agent'): void {
    // The path a tool complains about stands just before the complaint ("sh: cannot create /x: Permission denied").
    const at = line.search(MARKER_RE);
    let found = [...line.matchAll(PATH_RE)].map((m) => ({ p: m[1]!, i: m.index ?? 0 }));
    if (found.length === 0) found = [...line.matchAll(QUOTED_RE)].map((m) => ({ p: m[1]!, i: m.index ?? 0 }));
    const before = found.filter((f) => f.i < at);
    const raw = (before.length ? before[before.length - 1] : found[0])?.p;
    // `a/../../b` names b; a link in the workspace pointing out names where it points
    const named = raw === undefined ? undefined : throughLinks(path.resolve(this.cwd, raw));
    // a "no such file" alone counts only for a path the allow-list hides
    if (!REFUSED_RE.test(line) && (named === undefined || !this.hiddenFromRun(named))) return;
    const kept = line.slice(0, 500);
    const from = source ? { source } : {};
    if (named === undefined) {
      const m = PORT_RE.exec(line);
      const port = m ? Number(m[1] ?? m[2]) : NaN;
      const d: Denial =
        port >= 1 && port <= 65535
          ? { path: null, line: kept, port, ...from }
          : { path: null, line: kept, ...from };
      this.found.push(d);
      this.onDenial(d);
      return;
    }
    const inside = this.writable.some(
      (w) => named === w || named.startsWith(w.endsWith('/') ? w : w + path.sep),
    );
    if (inside) {
      // a denial inside the writable set is not the sandbox's doing, except a delete the flow withholds
      if (!(this.askDeletes && REMOVE_RE.test(line) && this.inWorkspace(named))) return;
      const d: Denial = { path: named, line: kept, remove: true, ...from };
      this.found.push(d);
      this.onDenial(d);
      return;
    }
    const d: Denial = { path: named, line: kept, ...from };
    this.found.push(d);
    this.onDenial(d);
  }

  /**
   * Whether `p` is missing for the run only because the allow-list hides it: its deepest folder that
   * exists here lies outside every tree the run sees and holds none of them (the run sees no name there).
   */
  private hiddenFromRun(p: string): boolean {
    const visible = this.visible?.();
    if (!visible?.length) return false;
    let at = p;
    while (!existsSync(at) && path.dirname(at) !== at) at = path.dirname(at);
    const under = (a: string, b: string): boolean => a === b || a.startsWith(b.endsWith('/') ? b : b + '/');
    return !visible.some((v) => under(at, v) || under(v, at));
  }

  private inWorkspace(p: string): boolean {
    return p === this.cwd || p.startsWith(this.cwd.endsWith('/') ? this.cwd : this.cwd + path.sep);
  }
}

/** `p` with its deepest existing folder resolved through symlinks (what the kernel refused). */
function throughLinks(p: string): string {
  for (let dir = p, rest = ''; ;) {
    try {
      return path.join(realpathSync(dir), rest);
    } catch {
      const up = path.dirname(dir);
      if (up === dir) return p;
      rest = path.join(path.basename(dir), rest);
      dir = up;
    }
  }
}
