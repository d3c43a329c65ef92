/**
 * A replay step carried out by its accessibility locator (locator-step.ts says what to do, locate.ts
 * finds): the element found (given a moment to show what the last action started), the input sent,
 * and for typed text the field read back, as the person would look. Each answers `true` or why not
 * (drift, in words for the model and the report); a sensitive value never appears in those words.
 */
import { desktop, type Rect, type WindowInfo } from '@runboard/native';
import type { OutcomeCheck } from '@runboard/supervisor/protocol';
import { checkHolds, findWindow, focusedField, locate } from './locate.ts';
import type { Located } from './match.ts';
import {
  focusVerdict,
  keyCombo,
  planLocatorStep,
  pointerInput,
  readValue,
  tabLanded,
  type Input,
} from './locator-step.ts';
import type { Locator, PlanStep } from './plan.ts';
import type { Secrets } from './secrets.ts';

/** How long a locator may take to show what the last action did before the step goes to the model. */
const LOCATOR_SETTLE_MS = 3000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function send(i: Input): Promise<void> {
  if (i.op === 'click') await desktop.click(i.at[0], i.at[1], { button: i.button, count: i.count });
  else if (i.op === 'scroll') await desktop.scroll(i.at[0], i.at[1], i.dx, i.dy);
  else if (i.op === 'drag') await desktop.drag(i.from, i.to, { button: i.button });
  else if (i.op === 'key') await desktop.key(i.combo, { waitHandled: true });
  else await desktop.type(i.text, { waitHandled: true });
}

/**
 * `look()` again until `good`, for at most LOCATOR_SETTLE_MS: what the last action started (a window
 * opening, the focus moving after a click) shows in the accessibility tree a moment later, later
 * still on a loaded machine, and a step is not sent to the model for that. Only looks, never acts.
 */
async function settled<T>(look: () => Promise<T>, good: (t: T) => boolean): Promise<T> {
  const deadline = performance.now() + LOCATOR_SETTLE_MS;
  for (;;) {
    const t = await look();
    if (good(t) || performance.now() >= deadline) return t;
    await sleep(50);
  }
}

export class ByLocator {
  constructor(
    private readonly o: {
      /** How long an outcome check, a typed value or a Tab's focus may take to show. */
      settleMs: number;
      secrets: Secrets;
      /** Masks a screen rectangle in every later screenshot (a field a sensitive value went into). */
      mask: (r: Rect) => void;
    },
  ) {}

  /** The step by its recorded element, or why not (drift, in words). */
  async run(step: PlanStep): Promise<true | string> {
    const plan = planLocatorStep(step);
    if (typeof plan === 'string') return plan;
    if (plan.kind === 'pointer') {
      const l = await settled(
        () => locate(plan.element, plan.window),
        (x) => x.ok,
      );
      if (!l.ok) return l.drift;
      if (!l.window.focused) await desktop.focus({ windowId: l.window.id });
      await send(pointerInput(plan.action, l.element.bounds));
      return true;
    }
    let field: Extract<Located, { ok: true }> | undefined;
    if (plan.kind === 'focus') {
      // A Tab press may find the focus still on the field before (tabTo below): no wait for it then.
      const l = await settled(
        () => locate(plan.focus, plan.window),
        (x) => x.ok && (plan.tab !== undefined || x.element.focused),
      );
      if (!l.ok) return l.drift;
      if (!l.window.focused) await desktop.focus({ windowId: l.window.id });
      const verdict = focusVerdict(plan, l.element);
      if (verdict === 'tab') return this.tabTo(plan.tab!, plan.focus, l.window);
      if (verdict !== 'ok') return verdict;
      field = l;
    } else {
      const w = await findWindow(plan.window);
      if (typeof w === 'string') return w;
      if (!w.focused) await desktop.focus({ windowId: w.id });
    }
    // A sensitive value's field is masked before it is typed: no picture of the display (the live view
    // included) ever shows it; and again after (the field may have moved as it filled).
    const secret = plan.input.op !== 'key' && this.o.secrets.in(plan.input.text).length > 0;
    if (secret) await this.typedSecret(field?.window, field?.element.bounds);
    await send(plan.input);
    if (plan.input.op === 'key') return true;
    const text = plan.input.text;
    const before = field?.element.value ?? '';
    if (secret) await this.typedSecret(field?.window, field?.element.bounds);
    if (!field || field.element.secret) return true;
    // The field holds what was typed (the app took every key): read back, as the person would look.
    const deadline = performance.now() + this.o.settleMs;
    for (;;) {
      const now = (await focusedField(field.window))?.value;
      if (now !== undefined && now.includes(text)) return true;
      if (performance.now() > deadline)
        return this.o.secrets.hide(
          `typed "${text}" but ${step.focus!.role} "${step.focus!.name}" holds ${JSON.stringify(now ?? before)}`,
        );
      await sleep(30);
    }
  }

  /** An extract step's value read off its locator's element, or why not. */
  async read(step: PlanStep): Promise<{ value: string } | string> {
    if (!step.element) return 'the step has no locator to read the value from';
    const l = await locate(step.element, step.window, { anywhere: true });
    if (!l.ok) return l.drift;
    return readValue(l.element);
  }

  /** A check that may need a moment to show (the app redraws after the action). */
  async holds(check: OutcomeCheck, signal: AbortSignal): Promise<boolean> {
    const deadline = performance.now() + this.o.settleMs;
    for (;;) {
      if (await checkHolds(check)) return true;
      if (performance.now() > deadline || signal.aborted) return false;
      await sleep(50);
    }
  }

  /**
   * A sensitive value was just typed into the focused field of `win` (or `field`): that field is masked
   * in every later screenshot, the filmstrip's and the model's (the field may show what it holds).
   */
  async typedSecret(win: WindowInfo | undefined, field?: Rect): Promise<void> {
    if (field) this.o.mask(field);
    const w = win ?? (await findWindow(undefined).then((x) => (typeof x === 'string' ? undefined : x)));
    const now = w ? await focusedField(w) : undefined;
    if (now) this.o.mask(now.bounds);
  }

  /** Presses a Tab key and checks that the focus lands on the field `to`; why not, when it does not. */
  private async tabTo(key: string, to: Locator, win: WindowInfo): Promise<true | string> {
    await send({ op: 'key', combo: keyCombo(key) });
    const deadline = performance.now() + this.o.settleMs;
    for (;;) {
      const landed = tabLanded(key, to, await focusedField(win));
      if (landed === true || performance.now() > deadline) return landed;
      await sleep(30);
    }
  }
}
