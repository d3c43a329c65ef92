// Prints the structure figures docs/structure.md records (issue 29): the largest source files, how many
// are over 450 and over 600 lines, the classes and functions of the orchestrators (methods per class, the
// longest method), and the import circles (scripts/check-boundaries.mjs's graph; working tree only).
//   node scripts/structure-figures.mjs            the working tree
//   node scripts/structure-figures.mjs --rev C    commit C, read through git (no checkout needed)
//   add --json for the figures as one JSON object
// Source files: host, supervisor, worker, native and packages/* sources (src/, no *.test.ts, no .d.ts):
// .ts, .tsx, .cc, .h. Lines are newline characters, as `wc -l` counts them.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const revAt = args.indexOf('--rev');
const rev = revAt >= 0 ? args[revAt + 1] : undefined;
if (revAt >= 0 && !rev) {
  console.error('structure-figures: --rev needs a commit (e.g. --rev eb3daea)');
  process.exit(2);
}
const json = args.includes('--json');

/** The orchestrators issue 29 names (and two more); a file that is gone at that revision is shown as such. */
const ORCHESTRATORS = [
  'supervisor/src/node/run.ts',
  'host/src/core/board-service.ts',
  'host/src/core/scheduler.ts',
  'worker/src/runners/replay/replay.ts',
  'native/src/linux/jail.cc',
  'native/src/main.cc',
  'supervisor/src/node/fleet/gateway.ts',
  // session 14: the two that grew past 600 lines with session 13's capabilities
  'supervisor/src/node/registry.ts',
  'host/src/core/board-store.ts',
];

const SOURCE = /^(host|supervisor|worker|native|packages\/[^/]+)\/src\/.*\.(ts|tsx|cc|h)$/;
const isSource = (f) => SOURCE.test(f) && !f.endsWith('.test.ts') && !f.endsWith('.d.ts');

function listFiles() {
  const out = rev
    ? execFileSync('git', ['ls-tree', '-r', '--name-only', rev], { cwd: root, encoding: 'utf8' })
    : execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
        cwd: root,
        encoding: 'utf8',
      });
  return out.split('\n').filter((f) => f && isSource(f) && (rev || fs.existsSync(path.join(root, f))));
}

function read(f) {
  if (!rev) return fs.existsSync(path.join(root, f)) ? fs.readFileSync(path.join(root, f), 'utf8') : null;
  try {
    return execFileSync('git', ['show', `${rev}:${f}`], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 64 << 20,
    });
  } catch {
    return null;
  }
}

const lineCount = (text) => (text.match(/\n/g) ?? []).length;

/** A TypeScript file's classes (methods, accessors and the constructor; the longest) and top-level functions. */
function tsShape(file, text) {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lines = (n) =>
    sf.getLineAndCharacterOfPosition(n.getEnd()).line -
    sf.getLineAndCharacterOfPosition(n.getStart()).line +
    1;
  const classes = [];
  let functions = 0;
  let longestFunction = { name: '', lines: 0 };
  for (const s of sf.statements) {
    if (ts.isClassDeclaration(s)) {
      let longest = { name: '', lines: 0 };
      let methods = 0;
      for (const m of s.members) {
        if (
          ts.isMethodDeclaration(m) ||
          ts.isConstructorDeclaration(m) ||
          ts.isGetAccessorDeclaration(m) ||
          ts.isSetAccessorDeclaration(m)
        ) {
          methods++;
          const name = ts.isConstructorDeclaration(m) ? 'constructor' : m.name.getText(sf);
          if (lines(m) > longest.lines) longest = { name, lines: lines(m) };
        }
      }
      classes.push({ name: s.name?.text ?? '(anonymous)', methods, longest });
    } else if (ts.isFunctionDeclaration(s)) {
      functions++;
      if (lines(s) > longestFunction.lines) longestFunction = { name: s.name?.text ?? '', lines: lines(s) };
    }
  }
  return { classes, functions, longestFunction };
}

/**
 * A C++ file's function definitions, roughly: a brace opened at namespace level by a line that is not a
 * namespace, class, struct, enum or initialiser opens a function, which ends where that brace closes.
 */
const FN_HEAD = /\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->\s*[\w:<>]+)?\s*(:[^{]*)?$/;

function ccShape(text) {
  const src = text
    .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' '))
    .replace(/\/\/.*$/gm, '')
    .replace(/"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'/g, '""');
  const lines = src.split('\n');
  const stack = []; // 'ns' (transparent), 'fn', 'other'
  let functions = 0;
  let longestFunction = { name: '', lines: 0 };
  let fnStart = -1;
  let fnName = '';
  let header = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    for (const ch of line) {
      if (ch === '{') {
        const inFn = stack.includes('fn');
        const inType = stack.includes('other');
        // the declaration this brace opens: what follows the last `;` or `}` before it
        const h = (header + ' ' + line).split(/[;}]/).pop().trim();
        let kind = 'other';
        if (!inFn && !inType) {
          const head = h.split('{')[0].trim();
          if (/^(namespace\b|extern\s+"")/.test(head)) kind = 'ns';
          else if (FN_HEAD.test(head) && !/\b(class|struct|enum|union)\b/.test(head.split('(')[0]))
            kind = 'fn';
        }
        if (kind === 'fn') {
          functions++;
          fnStart = i;
          const before = h.split('(')[0].trim().split(/\s+/);
          fnName = before[before.length - 1] ?? '';
        }
        stack.push(kind);
        header = '';
      } else if (ch === '}') {
        const k = stack.pop();
        if (k === 'fn' && !stack.includes('fn')) {
          const n = i - fnStart + 1;
          if (n > longestFunction.lines) longestFunction = { name: fnName, lines: n };
        }
      } else if (ch === ';' && !stack.includes('fn')) header = '';
    }
    if (!line.includes('{') && !stack.includes('fn')) header += ' ' + line.trim();
    if (/^\s*#/.test(line)) header = '';
  }
  return { classes: [], functions, longestFunction };
}

const files = listFiles().map((f) => ({ file: f, lines: lineCount(read(f) ?? '') }));
files.sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
const orchestrators = ORCHESTRATORS.map((f) => {
  const text = read(f);
  if (text === null) return { file: f, gone: true };
  return { file: f, lines: lineCount(text), ...(f.endsWith('.cc') ? ccShape(text) : tsShape(f, text)) };
});

let circles = null;
if (!rev) {
  const out = execFileSync('node', ['scripts/check-boundaries.mjs'], { cwd: root, encoding: 'utf8' });
  const m = /(\d+) source files with no import circle/.exec(out);
  circles = m ? 0 : null;
}

const figures = {
  at: rev ?? 'working tree',
  commit: execFileSync('git', ['rev-parse', '--short', rev ?? 'HEAD'], {
    cwd: root,
    encoding: 'utf8',
  }).trim(),
  sourceFiles: files.length,
  largest: files[0],
  over450: files.filter((f) => f.lines > 450).length,
  over600: files.filter((f) => f.lines > 600).length,
  top: files.slice(0, 12),
  orchestrators,
  importCircles: circles,
};

if (json) {
  console.log(JSON.stringify(figures, null, 2));
} else {
  const p = (s) => console.log(s);
  p(`structure figures at ${figures.at} (${figures.commit}): ${figures.sourceFiles} source files`);
  p(`largest: ${figures.largest.file} (${figures.largest.lines} lines)`);
  p(`over 450 lines: ${figures.over450}; over 600 lines: ${figures.over600}`);
  p(
    `import circles: ${circles ?? 'not computed for --rev (run scripts/check-boundaries.mjs at that commit)'}`,
  );
  p('largest files:');
  for (const f of figures.top) p(`  ${String(f.lines).padStart(5)}  ${f.file}`);
  p('orchestrators (issue 29):');
  for (const o of orchestrators) {
    if (o.gone) {
      p(`  ${o.file}: gone`);
      continue;
    }
    const cls = o.classes
      .map((c) => `${c.name} ${c.methods} methods (longest ${c.longest.name} ${c.longest.lines})`)
      .join('; ');
    const fn = o.functions
      ? `${o.functions} top-level functions (longest ${o.longestFunction.name} ${o.longestFunction.lines})`
      : '';
    p(`  ${o.file}: ${o.lines} lines; ${[cls, fn].filter(Boolean).join('; ') || 'no class or function'}`);
  }
}
