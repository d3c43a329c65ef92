// desktop-cli's screenshots: screenshot and screenshot-coords (labelled with the elements' centres).
import { writeFileSync } from 'node:fs';
import { desktop } from '../desktop/desktop.ts';
import { type Values, type Out, int, num, str, targetOf, rolesOf, centre } from './args.ts';
import { drawLabels } from './draw.ts';
import { CliError } from './errors.ts';
import { agentFormat, allCompact, filterTree, prune, textMatches } from './format.ts';
import { head, maxFor, readWindow } from './read-commands.ts';

function imageOpts(
  v: Values,
  defaultScale: number,
): { format: 'png' | 'jpeg'; quality: number; scale: number } {
  const fmt = (v.format as string | undefined) ?? 'png';
  if (fmt !== 'png' && fmt !== 'jpg' && fmt !== 'jpeg')
    throw new CliError('USAGE', '--format must be png or jpg');
  return {
    format: fmt === 'png' ? 'png' : 'jpeg',
    quality: int(v.quality, 'quality', 1, 100) ?? 80,
    scale: num(v.scale, 'scale', 0.1, 1) ?? defaultScale,
  };
}

function writeImage(v: Values, data: Buffer, format: 'png' | 'jpeg', fallback: string): string | undefined {
  const output = (v.output as string | undefined) ?? `${fallback}.${format === 'png' ? 'png' : 'jpg'}`;
  if (output === '-') return undefined;
  writeFileSync(output, data);
  return output;
}

export async function screenshot(v: Values): Promise<Out> {
  const q = targetOf(v);
  const { format, quality, scale } = imageOpts(v, 0.5);
  const shot = await desktop.capture({ ...q, format, quality, scale });
  return imageOut(v, shot.data, format, '/tmp/screenshot', shot);
}

/** An encoded image written to --output (or the default path), or sent as base64 with `--output -`. */
function imageOut(
  v: Values,
  data: Buffer,
  format: 'png' | 'jpeg',
  fallback: string,
  shot: { width: number; height: number; source: unknown },
  extra: Record<string, unknown> = {},
): Out {
  const file = writeImage(v, data, format, fallback);
  if (!file) return { value: undefined, raw: data.toString('base64') + '\n' };
  const { width: w, height: h, source: b } = shot;
  return {
    value: { path: file, format: format === 'png' ? 'png' : 'jpg', w, h, b, bytes: data.length, ...extra },
  };
}

export async function screenshotCoords(v: Values): Promise<Out> {
  const q = targetOf(v);
  const { format, quality, scale } = imageOpts(v, 0.5);
  const depth = int(v.depth, 'depth', 0);
  const roles = rolesOf(v.roles);
  const { result, tree: whole } = await readWindow(q, {
    ...(depth ? { depth } : {}),
    ...(roles ? { roles } : {}),
  });
  let tree = v.prune ? prune(whole) : whole;
  const text = str(v.text);
  if (text !== undefined) tree = filterTree(tree, (e) => textMatches(e, text));
  let els = allCompact(tree).filter((e) => e.b[2] > 0 && e.b[3] > 0);
  if (!v['all-elements']) els = els.filter((e) => e.a !== undefined || e.r === 'input');
  if (text !== undefined) els = els.filter((e) => textMatches(e, text));
  const labelled = els.map((e) => {
    const [cx, cy] = centre(e.b);
    return { i: e.i, r: e.r, ...(e.t ? { t: e.t } : {}), x: cx, y: cy, b: e.b };
  });
  const { data, shot } = await labelledShot(
    result.window.id,
    labelled.map((e) => ({ b: e.b, text: `(${e.x},${e.y})` })),
    { format, quality, scale },
  );
  return imageOut(v, data, format, '/tmp/screenshot-coords', shot, {
    elements: labelled.map(({ b: _b, ...e }) => e),
  });
}

/** A window's screenshot with a red label on each box (screen coordinates), encoded. */
async function labelledShot(
  windowId: number,
  labels: { b: [number, number, number, number]; text: string }[],
  o: { format: 'png' | 'jpeg'; quality: number; scale: number },
) {
  const shot = await desktop.capture({ windowId, format: 'raw', scale: o.scale });
  const [sx, sy, sw, sh] = shot.source;
  const kx = shot.width / sw;
  const ky = shot.height / sh;
  drawLabels(
    shot.data,
    shot.width,
    shot.height,
    labels.map((l) => ({
      box: [(l.b[0] - sx) * kx, (l.b[1] - sy) * ky, l.b[2] * kx, l.b[3] * ky],
      text: l.text,
    })),
  );
  const data = await desktop.encodeImage(
    { data: shot.data, width: shot.width, height: shot.height },
    { format: o.format, quality: o.quality },
  );
  return { data, shot };
}

/**
 * read --format screenshot (the public tool's): the window's screenshot with each element's [id] on
 * it (interactive ones; --all-elements: all), scale 0.25 by default, and the same elements in the
 * agent format, in one answer. The image is base64 in `image`, or written to --screenshot-output
 * (then `image` is that path).
 */
export async function readScreenshot(v: Values): Promise<Out> {
  const fmt = str(v['image-format']) ?? 'png';
  if (fmt !== 'png' && fmt !== 'jpg' && fmt !== 'jpeg')
    throw new CliError('USAGE', '--image-format must be png or jpg');
  const format = fmt === 'png' ? 'png' : 'jpeg';
  const quality = int(v.quality, 'quality', 1, 100) ?? 80;
  const scale = num(v.scale, 'scale', 0.1, 1) ?? 0.25;
  const depth = int(v.depth, 'depth', 0);
  const roles = rolesOf(v.roles);
  const { result, tree: whole } = await readWindow(targetOf(v), {
    ...(depth ? { depth } : {}),
    ...(roles ? { roles } : {}),
  });
  const tree = v.prune ? prune(whole) : whole;
  let els = allCompact(tree).filter((e) => e.b[2] > 0 && e.b[3] > 0);
  if (!v['all-elements']) els = els.filter((e) => e.a !== undefined || e.r === 'input');
  const { data, shot } = await labelledShot(
    result.window.id,
    els.map((e) => ({ b: e.b, text: `[${e.i}]` })),
    { format, quality, scale },
  );
  const out = str(v['screenshot-output']);
  if (out !== undefined) writeFileSync(out, data);
  const w = result.window;
  return {
    value: {
      ok: true,
      action: 'read',
      app: w.app,
      pid: w.pid,
      window: w.title,
      image: out ?? data.toString('base64'),
      format: format === 'png' ? 'png' : 'jpg',
      w: shot.width,
      h: shot.height,
      elements: agentFormat(head(w), tree, maxFor(v['max-elements'], 'max-elements', tree)),
    },
  };
}
