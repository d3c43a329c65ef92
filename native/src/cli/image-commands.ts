// desktop-cli's screenshots: screenshot and screenshot-coords (labelled with the elements' centres).
import { writeFileSync } from 'node:fs';
import { desktop } from '../desktop/desktop.ts';
import { type Values, type Out, int, num, str, targetOf, rolesOf, centre } from './args.ts';
import { drawLabels } from './draw.ts';
import { CliError } from './errors.ts';
import { allCompact, filterTree, prune, textMatches } from './format.ts';
import { readWindow } from './read-commands.ts';

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
  const shot = await desktop.capture({ windowId: result.window.id, format: 'raw', scale });
  const [sx, sy, sw, sh] = shot.source;
  const kx = shot.width / sw;
  const ky = shot.height / sh;
  const labelled = els.map((e) => {
    const [cx, cy] = centre(e.b);
    return { i: e.i, r: e.r, ...(e.t ? { t: e.t } : {}), x: cx, y: cy, b: e.b };
  });
  drawLabels(
    shot.data,
    shot.width,
    shot.height,
    labelled.map((e) => ({
      box: [(e.b[0] - sx) * kx, (e.b[1] - sy) * ky, e.b[2] * kx, e.b[3] * ky],
      text: `(${e.x},${e.y})`,
    })),
  );
  const data = await desktop.encodeImage(
    { data: shot.data, width: shot.width, height: shot.height },
    { format, quality },
  );
  return imageOut(v, data, format, '/tmp/screenshot-coords', shot, {
    elements: labelled.map(({ b: _b, ...e }) => e),
  });
}
