/**
 * The document tools attacked from inside a real run (supervisor → jail → command): the run drives the
 * documents MCP server (dist/documents-mcp.cjs, as codex and claude do) over stdio on its own workspace.
 * A ZIP bomb as .docx, an output name that is a dangling link, a folder swapped for a link while the tool
 * checks and opens. Each failed on the main before its fix (docs/security-model.md, Document tools).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, REPO } from '../helpers/harness.ts';

const SERVER = path.join(REPO, 'dist', 'documents-mcp.cjs');

/**
 * Python run inside the run: `setup` (python statements), then each tool call of `calls` (a python
 * expression giving a list of [tool, arguments]), printing one JSON line per answer: {error, text}.
 */
const driver = (setup: string, calls: string): string => `
import ctypes, json, os, subprocess, sys, zipfile
${setup}
p = subprocess.Popen([${JSON.stringify(process.execPath)}, ${JSON.stringify(SERVER)}, "--workspace", "."],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(m):
    p.stdin.write((json.dumps(m) + "\\n").encode()); p.stdin.flush()
def answer(i):
    while True:
        line = p.stdout.readline()
        if not line: sys.exit("the document server ended")
        m = json.loads(line)
        if m.get("id") == i: return m
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "attack", "version": "1"}}})
answer(0)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
for i, (tool, args) in enumerate(${calls}, 1):
    send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}})
    r = answer(i).get("result", {})
    print(json.dumps({"error": bool(r.get("isError")), "text": r["content"][0]["text"] if r.get("content") else ""}), flush=True)
p.stdin.close(); p.wait()
`;

interface Answer {
  error: boolean;
  text: string;
}
const answers = (stdout: string): Answer[] =>
  stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Answer);

describe('document tools attacked from inside a run', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('a DOCX that inflates to 600 MB is refused with a clear error, the run stays small', async () => {
    const bomb = [
      'with zipfile.ZipFile("bomb.docx", "w", zipfile.ZIP_DEFLATED) as z:',
      '    z.writestr("[Content_Types].xml", "<Types/>")',
      '    with z.open("word/document.xml", "w", force_zip64=False) as f:',
      '        chunk = b" " * (1 << 20)',
      '        for _ in range(600): f.write(chunk)',
      'print("bomb", os.path.getsize("bomb.docx"), file=sys.stderr)',
    ].join('\n');
    const rec = await h.run(['python3', '-c', driver(bomb, '[["read_document", {"path": "bomb.docx"}]]')], {
      sandbox: { memory: '1g' },
    });
    expect(rec.result.status).toBe('succeeded');
    const [a] = answers(rec.stdout);
    expect(a?.error).toBe(true);
    expect(a?.text).toMatch(/^bomb\.docx: its entries inflate to more than 256 MiB; .*ZIP bomb/);
  });

  it('export_document never writes through a link, a dangling one included', async () => {
    const setup = [
      'open("notes.md", "w").write("# Notes\\n")',
      'os.symlink(os.path.join(os.environ["HOME"], "planted.docx"), "out.docx")',
    ].join('\n');
    const check =
      '\nprint(json.dumps({"planted": os.path.lexists(os.path.join(os.environ["HOME"], "planted.docx"))}))';
    const rec = await h.run([
      'python3',
      '-c',
      driver(setup, '[["export_document", {"md_path": "notes.md", "output_path": "out.docx"}]]') + check,
    ]);
    const [a, planted] = rec.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(a).toMatchObject({ error: true });
    expect(String(a!.text)).toMatch(
      /out\.docx is a symbolic link: the document tools never write through one/,
    );
    expect(planted).toEqual({ planted: false });
  });

  it('a folder swapped for a link between the check and the open gives nothing from outside', async () => {
    // docs/ (inside) and swap -> $HOME/private (outside, readable by the run) are exchanged without pause.
    const setup = [
      'home = os.environ["HOME"]',
      'os.makedirs(os.path.join(home, "private"), exist_ok=True)',
      'open(os.path.join(home, "private", "notes.md"), "w").write("SECRET-OUTSIDE\\n")',
      'os.makedirs("docs", exist_ok=True)',
      'open("docs/notes.md", "w").write("inside\\n")',
      'os.symlink(os.path.join(home, "private"), "swap")',
      'swapper = subprocess.Popen([sys.executable, "-c", "import ctypes\\nlibc = ctypes.CDLL(None)\\nwhile True: libc.renameat2(-100, b\\"docs\\", -100, b\\"swap\\", 2)"])',
    ].join('\n');
    const calls = '[["read_document", {"path": "docs/notes.md"}]] * 300';
    const rec = await h.run(['python3', '-c', driver(setup, calls) + '\nswapper.kill()']);
    const all = answers(rec.stdout);
    expect(all).toHaveLength(300);
    expect(all.filter((a) => a.text.includes('SECRET-OUTSIDE'))).toEqual([]);
    // it still reads the inside file when it can
    expect(all.some((a) => !a.error && a.text.includes('inside'))).toBe(true);
  });
});
