// desktop-cli's input commands: click, hover, type/key, scroll, drag, action, set-value and fill.
import { allElements, platformAction, type CompactElement } from '../desktop/compact.ts';
import { desktop } from '../desktop/desktop.ts';
import { DesktopError } from '../desktop/types.ts';
import { type Values, type Out, int, str, targetOf, hasTarget, button, centre } from './args.ts';
import { CliError } from './errors.ts';
import { allCompact, info, textCandidates, type ElementInfo } from './format.ts';
import { besideText, NEAR_DIRECTIONS, nearAnchors, nearest, type NearDirection } from './near.ts';
import { yaml, readStdin } from './output.ts';
import { readWindow } from './read-commands.ts';
import {
  locate,
  locateOrThrow,
  xy,
  postRead,
  verified,
  displayOf,
  focusElement,
  focusedElement,
  type Located,
} from './target.ts';

export async function click(v: Values): Promise<Out> {
  const btn = button(v.button);
  const count = v.double ? 2 : 1;
  if (v.near || v['near-direction'] !== undefined) return clickNear(v, btn, count);
  const found = await locate(v);
  if (found) {
    await desktop.focus({ windowId: found.windowId });
    const [x, y] = centre(found.el.bounds);
    const press = platformAction(found.el, 'press');
    const ver = await verified(v, found.windowId, [
      { method: 'click', run: () => desktop.click(x, y, { button: btn, count }) },
      ...(press
        ? [
            {
              method: 'action',
              run: async () =>
                void (await desktop.doAction({ windowId: found.windowId }, found.el.id, press)),
            },
          ]
        : []),
      { method: 'offset-click', run: () => desktop.click(x + 2, y + 2, { button: btn, count }) },
    ]);
    return {
      value: {
        ok: true,
        action: 'click',
        x,
        y,
        button: btn,
        count,
        target: found.c,
        ...ver,
        ...(await displayOf(v, found.windowId, found.c.b)),
        ...(await postRead(v, found.windowId)),
      },
    };
  }
  const p = await xy(v, 'x', 'y');
  if (!p) throw new CliError('USAGE', 'click needs --text, --ref, --id, or --x and --y');
  if (v.verify) throw new CliError('USAGE', '--verify needs an element (--text, --ref or --id), not a point');
  await desktop.click(p[0], p[1], { button: btn, count });
  return {
    value: {
      ok: true,
      action: 'click',
      x: p[0],
      y: p[1],
      button: btn,
      count,
      ...(await displayOf(v, undefined, [p[0], p[1], 0, 0])),
      ...(await postRead(v, undefined)),
    },
  };
}

/** click --text T --near [--near-direction d]: the control nearest the text, else just beside the text. */
async function clickNear(v: Values, btn: ReturnType<typeof button>, count: number): Promise<Out> {
  const text = str(v.text);
  if (text === undefined) throw new CliError('USAGE', '--near needs --text: the label to look near');
  const d = str(v['near-direction']);
  if (d !== undefined && !(NEAR_DIRECTIONS as readonly string[]).includes(d))
    throw new CliError('USAGE', `--near-direction must be ${NEAR_DIRECTIONS.join(', ')} (not "${d}")`);
  const dir = d as NearDirection | undefined;
  const { result, tree } = await readWindow(targetOf(v));
  const w = result.window;
  const anchors = nearAnchors(tree, text, v.exact === true);
  if (anchors.length === 0)
    throw new CliError('ELEMENT_NOT_FOUND', `no element in "${w.title}" matches the text "${text}"`, {
      text,
    });
  if (anchors.length > 1)
    throw new CliError(
      'ELEMENT_AMBIGUOUS',
      `${anchors.length} elements in "${w.title}" match the text "${text}": add --exact, or use --id`,
      { text, candidates: anchors.slice(0, 10).map(info) },
    );
  const anchor = anchors[0]!;
  const hit = nearest(tree, anchor, dir);
  const [x, y] = hit ? centre(hit.b) : besideText(anchor, dir);
  await desktop.focus({ windowId: w.id });
  await desktop.click(x, y, { button: btn, count });
  return {
    value: {
      ok: true,
      action: 'click',
      x,
      y,
      button: btn,
      count,
      ...(hit ? { target: info(hit) } : { beside: dir ?? 'left' }),
      near: info(anchor),
      ...(await displayOf(v, w.id, hit?.b ?? anchor.b)),
      ...(await postRead(v, w.id)),
    },
  };
}

export async function hover(v: Values): Promise<Out> {
  const found = await locate(v);
  let p: [number, number] | undefined;
  if (found) {
    await desktop.focus({ windowId: found.windowId });
    p = centre(found.el.bounds);
  } else p = await xy(v, 'x', 'y');
  if (!p) throw new CliError('USAGE', 'hover needs --text, --ref, --id, or --x and --y');
  await desktop.move(p[0], p[1]);
  return {
    value: {
      ok: true,
      action: 'hover',
      x: p[0],
      y: p[1],
      ...(found ? { target: found.c } : {}),
      ...(await postRead(v, found?.windowId)),
    },
  };
}

const NAVIGATION =
  /^(shift\+)?(tab|enter|return|escape|esc|up|down|left|right|arrow(up|down|left|right)|home|end|page_?up|page_?down)$/i;

export async function typeCmd(v: Values, positionals: string[]): Promise<Out> {
  const text =
    typeof v.text === 'string' ? v.text : positionals.length > 0 ? positionals.join(' ') : undefined;
  const key = str(v.key);
  if (text === undefined && key === undefined)
    throw new CliError('USAGE', 'type needs text (--text or an argument) or --key');
  const delayMs = int(v.delay, 'delay', 0, 10_000) ?? 0;
  const found = await locate(v, { text: 'target' });
  let focused: boolean | undefined;
  if (found) focused = await focusElement(found, `element ${found.el.id}`);
  else if (hasTarget(targetOf(v))) await desktop.focus(targetOf(v));
  // A navigation key without a target reports where the focus went: read it once the app handled the key.
  const reportFocus = !found && key !== undefined && NAVIGATION.test(key);
  const typeIt = async () => {
    // the next command sees the text: the app has handled the keys (decision 119)
    if (text !== undefined) await desktop.type(text, { delayMs, waitHandled: key === undefined });
    if (key !== undefined) await desktop.key(key, { delayMs, waitHandled: reportFocus });
  };
  const ver = found
    ? await verified(v, found.windowId, [
        { method: 'type', run: typeIt },
        ...(text !== undefined && !found.el.secret
          ? [
              {
                method: 'set-value',
                run: async () =>
                  void (await desktop.setValue({ windowId: found.windowId }, found.el.id, text)),
              },
            ]
          : []),
      ])
    : (await typeIt(), {});
  const action = text !== undefined && key !== undefined ? 'type+key' : text !== undefined ? 'type' : 'key';
  const value: Record<string, unknown> = { ok: true, action };
  if (text !== undefined && !found?.el.secret) value.text = text;
  if (key !== undefined) value.key = key;
  if (found) {
    value.focused = focused; // seed 003: whether the field had the focus before typing
    value.target = found.c;
  } else if (reportFocus) {
    const f = await focusedElement();
    if (f) value.focused = f;
  }
  return {
    value: {
      ...value,
      ...ver,
      ...(await displayOf(v, found?.windowId, found?.c.b)),
      ...(await postRead(v, found?.windowId)),
    },
  };
}

export async function scroll(v: Values): Promise<Out> {
  const dir = (v.direction as string | undefined) ?? 'down';
  const amount = int(v.amount, 'amount', 1, 1000) ?? 3;
  const deltas: Record<string, [number, number]> = {
    up: [0, -1],
    down: [0, 1],
    left: [-1, 0],
    right: [1, 0],
  };
  const d = deltas[dir];
  if (!d) throw new CliError('USAGE', '--direction must be up, down, left or right');
  const found = await locate(v);
  let p: [number, number] | undefined;
  if (found) {
    await desktop.focus({ windowId: found.windowId });
    p = centre(found.el.bounds);
  } else p = await xy(v, 'x', 'y');
  if (!p) {
    const q = targetOf(v);
    const wins = hasTarget(q)
      ? [await desktop.focus(q)]
      : (await desktop.listWindows()).filter((w) => w.focused);
    if (!wins[0])
      throw new CliError('USAGE', 'scroll needs --x/--y, --id, --text or a window (--app/--window)');
    p = centre(wins[0].bounds);
  }
  await desktop.scroll(p[0], p[1], d[0] * amount, d[1] * amount);
  return { value: { ok: true, action: 'scroll', direction: dir, amount, x: p[0], y: p[1] } };
}

export async function drag(v: Values): Promise<Out> {
  const end = async (side: 'from' | 'to'): Promise<[number, number] | undefined> => {
    const found = await locate(v, { id: `${side}-id`, text: `${side}-text`, ref: `${side}-ref` });
    if (found) {
      await desktop.focus({ windowId: found.windowId });
      return centre(found.el.bounds);
    }
    return xy(v, `${side}-x`, `${side}-y`);
  };
  const from = await end('from');
  const to = await end('to');
  if (!from || !to)
    throw new CliError(
      'USAGE',
      'drag needs a start (--from-x/--from-y, --from-id, --from-text or --from-ref) and an end (--to-x/--to-y, --to-id, --to-text or --to-ref)',
    );
  await desktop.drag(from, to);
  return {
    value: { ok: true, action: 'drag', from_x: from[0], from_y: from[1], to_x: to[0], to_y: to[1], from, to },
  };
}

export async function action(v: Values): Promise<Out> {
  const found = await locateOrThrow(v, 'action');
  const withActions = await desktop.read({ windowId: found.windowId, bbox: found.el.bounds });
  const el = allElements(withActions.elements).find((e) => e.id === found.el.id) ?? found.el;
  const wanted = str(v.action) ?? str(v.name) ?? '';
  const platform = wanted ? platformAction(el, wanted) : (el.actions[0] ?? '');
  if (platform === undefined || platform === '')
    throw new CliError(
      'ACTION_FAILED',
      `element ${el.id} has no action "${wanted || 'press'}" (it has: ${el.actions.join(', ') || 'none'})`,
      { id: el.id },
    );
  let done = '';
  const ver = await verified(v, found.windowId, [
    {
      method: 'action',
      run: async () => void (done = await desktop.doAction({ windowId: found.windowId }, el.id, platform)),
    },
  ]);
  return {
    value: {
      ok: true,
      action: 'action',
      id: el.id,
      name: wanted || 'press',
      performed: done,
      target: found.c,
      ...ver,
      ...(await displayOf(v, found.windowId, found.c.b)),
      ...(await postRead(v, found.windowId)),
    },
  };
}

/** Sets a field's text by keys: click it, select all, type (or delete when empty). */
async function typeInto(found: Located, value: string): Promise<void> {
  await focusElement(found, `element ${found.el.id}`);
  await desktop.key('ctrl+a');
  if (value === '') await desktop.key('BackSpace');
  else await desktop.type(value);
}

async function setValueOf(found: Located, value: string): Promise<string> {
  const r = found.c.r;
  if (r === 'chk' || r === 'radio') {
    const want = /^(1|true|yes|on|checked)$/i.test(value);
    const have = found.el.checked || found.el.value === '1';
    if (want !== have) {
      const press = platformAction(found.el, 'press');
      if (press) await desktop.doAction({ windowId: found.windowId }, found.el.id, press);
      else await desktop.click(...centre(found.el.bounds));
    }
    return 'checked';
  }
  try {
    return await desktop.setValue({ windowId: found.windowId }, found.el.id, value);
  } catch (e) {
    // An entry that refuses SetTextContents (some toolkits): the keys do what a person would.
    if (r === 'input' && e instanceof DesktopError && e.code === 'ACTION_FAILED') {
      await typeInto(found, value);
      return 'keys';
    }
    throw e;
  }
}

export async function setValue(v: Values): Promise<Out> {
  const value = str(v.value);
  if (value === undefined) throw new CliError('USAGE', 'set-value needs --value');
  const attribute = str(v.attribute) ?? 'value';
  if (!['value', 'focused', 'selected'].includes(attribute))
    throw new CliError('USAGE', '--attribute must be value, focused or selected');
  const found = await locateOrThrow(v, 'set-value');
  let how = '';
  const ver = await verified(v, found.windowId, [
    {
      method: 'set-value',
      run: async () => {
        if (attribute === 'value') how = await setValueOf(found, value);
        else if (/^(1|true|yes)$/i.test(value)) {
          await desktop.focus({ windowId: found.windowId });
          await desktop.click(...centre(found.el.bounds));
          how = 'click';
        } else how = 'none';
      },
    },
    ...(attribute === 'value' && found.c.r === 'input'
      ? [{ method: 'type', run: () => typeInto(found, value) }]
      : []),
  ]);
  return {
    value: {
      ok: true,
      action: 'set-value',
      id: found.el.id,
      ...(found.el.secret ? { secret: true } : { value }),
      attribute,
      set: how,
      ...ver,
      ...(await postRead(v, found.windowId)),
    },
  };
}

export async function fill(v: Values): Promise<Out> {
  type Field = { label?: string; id?: number; value: string; method?: string };
  const fields: Field[] = [];
  let submit = str(v.submit);
  const flags = (v.field as string[] | undefined) ?? [];
  for (const f of flags) {
    const eq = f.indexOf('=');
    if (eq <= 0) throw new CliError('USAGE', `--field "${f}" must be "Label=value" or "id:42=value"`);
    const key = f.slice(0, eq);
    const value = f.slice(eq + 1);
    const m = /^id:(\d+)$/.exec(key);
    fields.push(m ? { id: Number(m[1]), value } : { label: key, value });
  }
  const input = fields.length === 0 ? readStdin() : undefined;
  if (input !== undefined) {
    const doc = (await yaml()).parse(input) as
      { fields?: Record<string, unknown>[]; submit?: string } | undefined;
    for (const f of doc?.fields ?? []) {
      if (f.value === undefined || (f.label === undefined && f.id === undefined))
        throw new CliError('USAGE', 'each field on stdin needs a label or an id, and a value');
      fields.push({
        ...(f.label !== undefined ? { label: String(f.label) } : {}),
        ...(f.id !== undefined ? { id: Number(f.id) } : {}),
        value: String(f.value),
        ...(f.method !== undefined ? { method: String(f.method) } : {}),
      });
    }
    submit ??= doc?.submit;
  }
  if (fields.length === 0)
    throw new CliError(
      'USAGE',
      'fill needs --field "Label=value" (repeatable) or the fields as YAML on stdin',
    );
  const method = str(v.method) ?? 'set-value';
  if (method !== 'set-value' && method !== 'type')
    throw new CliError('USAGE', '--method must be set-value or type');
  // One read for every field.
  const { result, tree } = await readWindow(targetOf(v), { elements: true });
  const windowId = result.window.id;
  const els = allElements(result.elements);
  const results: Record<string, unknown>[] = [];
  let set = 0;
  for (const [k, f] of fields.entries()) {
    const name = f.label !== undefined ? { label: f.label } : { id: f.id };
    try {
      let hit: CompactElement | undefined;
      if (f.id !== undefined) hit = allCompact(tree).find((e) => e.i === f.id);
      else {
        const cands = textCandidates(tree, f.label!, {});
        const inputs = cands.filter((c) => c.r === 'input');
        hit = (inputs.length > 0 ? inputs : cands)[0];
      }
      if (!hit) throw new CliError('ELEMENT_NOT_FOUND', `no field matches ${f.label ?? `id ${f.id}`}`);
      const found: Located = { el: els.find((e) => e.id === hit.i)!, c: info(hit), windowId };
      if (v['tab-between'] && k > 0) {
        await desktop.key('Tab');
        await desktop.key('ctrl+a');
        await desktop.type(f.value);
      } else if ((f.method ?? method) === 'type') await typeInto(found, f.value);
      else await setValueOf(found, f.value);
      set++;
      results.push({
        ...name,
        ok: true,
        target: found.el.secret ? { ...found.c, secret: true } : { ...found.c, v: f.value },
      });
    } catch (e) {
      results.push({ ...name, ok: false, error: (e as Error).message });
    }
  }
  let submitted: ElementInfo | undefined;
  if (submit !== undefined) {
    const found = await locate({ ...v, text: submit, roles: 'btn' });
    if (found) {
      await desktop.focus({ windowId: found.windowId });
      await desktop.click(...centre(found.el.bounds));
      submitted = found.c;
    }
  }
  const ok = set === fields.length;
  const value = {
    ok,
    action: 'fill',
    fields_set: set,
    results,
    ...(submitted ? { submitted } : {}),
    ...(await postRead(v, windowId)),
  };
  return ok
    ? { value }
    : {
        value,
        error: new CliError(
          'ACTION_FAILED',
          `${fields.length - set} of ${fields.length} fields were not set`,
        ),
      };
}
