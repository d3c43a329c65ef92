/**
 * What an agent CLI's tool call would touch outside the run's own trees, for its permission hook
 * (agent-hook.ts): the file tools' paths, exactly, and a shell command's paths, best effort.
 *
 * - claude: Read / NotebookRead (read), Write / Edit / MultiEdit / NotebookEdit (write), Glob / Grep /
 *   LS (`path`, and an absolute pattern's fixed prefix: read), Bash (`command`).
 * - codex: its shell tools (`command`) and apply_patch (the patch's Add/Update/Delete/Move paths: write).
 * - A shell command is split into simple commands (quotes, `;`, `&&`, `||`, `|`, `&`, subshell
 *   parentheses); a redirect's target is a write (`>`, `>>`, `&>`; `<` a read), so are the operands
 *   of tools that write what they are given (cp/mv/ln/install/rsync: the last; tee, touch, mkdir, rm,
 *   rmdir, truncate, chmod, chown, `sed -i`: all; dd `of=`), and every other word that names a path
 *   (absolute, `~/…`, or relative with `..`) is a read. Not caught: paths built at run time
 *   (`$VAR` other than HOME/TMPDIR/PWD, `$(…)`, `eval`, a script's own file access, `cd x && cat y`
 *   resolves `y` against the start folder). The hook is a courtesy to the person (an ask before the
 *   act instead of a refusal after it); the jail is the boundary either way.
 */
import path from 'node:path';

export interface HookAsk {
  kind: 'read' | 'write';
  /** Absolute, normalised (not resolved through links: the supervisor does that). */
  path: string;
}

export interface HookPlace {
  /** The tool's working folder (the CLI's cwd). */
  cwd: string;
  /** The run's own trees: nothing in them is asked (workspace, HOME, TMPDIR, its private /tmp, /dev). */
  own: readonly string[];
  home?: string | undefined;
  tmpdir?: string | undefined;
}

const FILE_READ: Record<string, string> = { Read: 'file_path', NotebookRead: 'notebook_path' };
const FILE_WRITE: Record<string, string> = {
  Write: 'file_path',
  Edit: 'file_path',
  MultiEdit: 'file_path',
  NotebookEdit: 'notebook_path',
};
const SEARCH = new Set(['Glob', 'Grep', 'LS']);
/** Shell tools: claude's Bash, codex's (its PreToolUse hook names them Bash; older names too). */
const SHELL = new Set(['Bash', 'shell', 'exec_command', 'local_shell', 'container.exec', 'unified_exec']);

const within = (p: string, tree: string): boolean =>
  p === tree || p.startsWith(tree.endsWith('/') ? tree : tree + '/');

/** What the call would touch outside `place.own`, each path once (a write wins over a read). */
export function toolAsks(tool: string, input: unknown, place: HookPlace): HookAsk[] {
  const args = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  const str = (k: string): string | undefined => (typeof args[k] === 'string' ? args[k] : undefined);
  const raw: { kind: 'read' | 'write'; word: string }[] = [];
  if (FILE_READ[tool]) raw.push({ kind: 'read', word: str(FILE_READ[tool]) ?? '' });
  else if (FILE_WRITE[tool]) raw.push({ kind: 'write', word: str(FILE_WRITE[tool]) ?? '' });
  else if (SEARCH.has(tool)) {
    const p = str('path');
    if (p) raw.push({ kind: 'read', word: p });
    const pattern = str('pattern');
    if (tool === 'Glob' && pattern?.startsWith('/')) raw.push({ kind: 'read', word: fixedPrefix(pattern) });
  } else if (tool === 'apply_patch') {
    const patch = str('command') ?? str('input') ?? str('patch') ?? '';
    for (const m of patch.matchAll(/^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$/gm))
      raw.push({ kind: 'write', word: m[1]!.trim() });
  } else if (SHELL.has(tool)) {
    const cmd = args.command ?? args.cmd;
    const text = Array.isArray(cmd) ? cmd.map(String).join(' ') : typeof cmd === 'string' ? cmd : '';
    raw.push(...shellWords(text));
  }
  const out = new Map<string, HookAsk>();
  for (const r of raw) {
    const p = resolveWord(r.word, place);
    if (!p || place.own.some((t) => within(p, t))) continue;
    const had = out.get(p);
    if (!had || (had.kind === 'read' && r.kind === 'write')) out.set(p, { kind: r.kind, path: p });
  }
  return [...out.values()];
}

/** A glob's folder part before its first wildcard (`/etc/**\/*.conf` → `/etc`). */
function fixedPrefix(pattern: string): string {
  const at = pattern.search(/[*?[{]/);
  if (at < 0) return pattern;
  return path.dirname(pattern.slice(0, at) + 'x');
}

/** An absolute normalised path for a word, or null when it names none we can know. */
function resolveWord(word: string, place: HookPlace): string | null {
  let w = word.trim();
  if (!w || w.includes('\0')) return null;
  w = w.replace(/^\$\{?(HOME|TMPDIR|PWD)\}?(?=\/|$)/, (_, v: string) =>
    v === 'HOME' ? (place.home ?? '$') : v === 'TMPDIR' ? (place.tmpdir ?? '$') : place.cwd,
  );
  if (w === '~' || w.startsWith('~/')) {
    if (!place.home) return null;
    w = place.home + w.slice(1);
  }
  if (/[$`]/.test(w)) return null; // built at run time: not known here
  if (/[*?[{]/.test(w)) w = fixedPrefix(w.startsWith('/') ? w : path.join(place.cwd, w));
  return path.resolve(place.cwd, w);
}

/** Tools that write the paths they are given: all operands, or the last one only. */
const WRITES_ALL = new Set(['tee', 'touch', 'mkdir', 'rm', 'rmdir', 'truncate', 'chmod', 'chown', 'shred']);
const WRITES_LAST = new Set(['cp', 'mv', 'ln', 'install', 'rsync', 'scp']);
/** Prefixes that run the command after them. */
const RUNS_NEXT = new Set(['sudo', 'env', 'nohup', 'time', 'nice', 'timeout', 'exec', 'command', 'xargs']);

type Token = { word: string } | { op: string };

/** The shell command's words, split by quotes and operators (a small POSIX-like lexer). */
export function lex(text: string): Token[] {
  const out: Token[] = [];
  let word: string | null = null;
  const flush = (): void => {
    if (word !== null) out.push({ word });
    word = null;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      word = (word ?? '') + text.slice(i + 1, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end;
    } else if (c === '"') {
      let j = i + 1;
      let s = '';
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === '\\' && j + 1 < text.length && '"\\$`'.includes(text[j + 1]!)) j++;
        s += text[j];
      }
      word = (word ?? '') + s;
      i = j;
    } else if (c === '\\' && i + 1 < text.length) {
      word = (word ?? '') + (text[i + 1] === '\n' ? '' : text[i + 1]);
      i++;
    } else if (/\s/.test(c)) {
      flush();
      if (c === '\n') out.push({ op: ';' });
    } else if (c === '#' && word === null) {
      const nl = text.indexOf('\n', i);
      i = nl < 0 ? text.length : nl - 1;
    } else {
      const op = /^(?:&>>|&>|\d?>>|\d?>&\d|\d?>|<<<|<|&&|\|\||[|;&()])/.exec(text.slice(i))?.[0];
      if (op && !(/^\d/.test(op) && word !== null)) {
        flush();
        out.push({ op });
        i += op.length - 1;
      } else word = (word ?? '') + c;
    }
  }
  flush();
  return out;
}

/** The paths a shell command names, with what it would do to each (see the header). */
export function shellWords(text: string): { kind: 'read' | 'write'; word: string }[] {
  const found: { kind: 'read' | 'write'; word: string }[] = [];
  const tokens = lex(text);
  let words: string[] = [];
  const endCommand = (): void => {
    commandWords(words, found);
    words = [];
  };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if ('word' in t) {
      words.push(t.word);
      continue;
    }
    if (/>&\d$/.test(t.op)) continue; // 2>&1: no file
    if (/^(?:&>>|&>|\d?>>|\d?>|<|<<<)$/.test(t.op)) {
      const next = tokens[i + 1];
      if (next && 'word' in next && t.op !== '<<<') {
        if (next.word !== '/dev/null') found.push({ kind: t.op === '<' ? 'read' : 'write', word: next.word });
        i++;
      }
      continue;
    }
    endCommand();
  }
  endCommand();
  return found.filter((f) => looksLikePath(f.word) || f.kind === 'write');
}

/** A word that names a path the lexer can know: absolute, home-relative, or climbing with `..`. */
function looksLikePath(w: string): boolean {
  return (
    w.startsWith('/') ||
    w.startsWith('~') ||
    /^\$\{?(?:HOME|TMPDIR)\b/.test(w) ||
    /(?:^|\/)\.\.(?:\/|$)/.test(w)
  );
}

function commandWords(words: string[], found: { kind: 'read' | 'write'; word: string }[]): void {
  let at = 0;
  while (at < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[at]!)) at++;
  while (at < words.length && RUNS_NEXT.has(path.basename(words[at]!))) {
    at++;
    while (at < words.length && words[at]!.startsWith('-')) at++;
  }
  const name = words[at] ? path.basename(words[at]!) : '';
  const rest = words.slice(at + 1);
  // option values (`--out=/x`, dd's `of=/x`) count as operands of their own
  const operands: string[] = [];
  const values: string[] = [];
  for (const w of rest) {
    const eq = /^(?:--?[A-Za-z0-9-]+|if|of)=(.+)$/.exec(w);
    if (eq) values.push(w.startsWith('of=') ? `\0write\0${eq[1]}` : eq[1]!);
    else if (!w.startsWith('-') || w === '-') operands.push(w);
  }
  const inPlace = name === 'sed' && rest.some((w) => /^-[a-zA-Z]*i/.test(w) || w.startsWith('--in-place'));
  operands.forEach((w, k) => {
    const write =
      WRITES_ALL.has(name) || inPlace
        ? !(inPlace && k === 0 && !rest.some((r) => r === '-e' || r === '-f'))
        : WRITES_LAST.has(name) && k === operands.length - 1 && operands.length > 1;
    if (write || looksLikePath(w)) found.push({ kind: write ? 'write' : 'read', word: w });
  });
  for (const v of values) {
    if (v.startsWith('\0write\0')) found.push({ kind: 'write', word: v.slice(7) });
    else if (looksLikePath(v)) found.push({ kind: 'read', word: v });
  }
  if (name === 'cd' && operands[0]) found.push({ kind: 'read', word: operands[0] });
}
