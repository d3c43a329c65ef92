/**
 * A replay's sensitive parameters (docs/workflows.md, "Sensitive parameters"): their values are typed,
 * never shown, sent, logged or left on a screenshot. What the model is told of them is their `{name}`,
 * which it may type; replay types the value in its place. Pure: no desktop, no model.
 */
import { sensitiveValues, type Plan, type Values } from './plan.ts';

export class Secrets {
  /** Sensitive parameters' values by name. */
  readonly values: Values;
  /** The parameters as the model may know them: a sensitive one as its own `{name}`. */
  readonly modelValues: Values;

  constructor(plan: Plan, values: Values) {
    this.values = sensitiveValues(plan, values);
    this.modelValues = {
      ...values,
      ...Object.fromEntries(Object.keys(this.values).map((k) => [k, `{${k}}`])),
    };
  }

  get names(): string[] {
    return Object.keys(this.values);
  }

  /** The parameters as the model's query lists them: a sensitive one by its name, to type as `{name}`. */
  modelParams(): Values {
    return Object.fromEntries(
      Object.entries(this.modelValues).map(([k, v]) => [
        k,
        this.values[k] !== undefined
          ? `(sensitive: never shown to you; to type it, type exactly "{${k}}" and replay types the value)`
          : v,
      ]),
    );
  }

  /** A text for the model or the card with every sensitive value replaced by its `{name}`. */
  hide(text: string): string {
    let out = text;
    for (const [k, v] of Object.entries(this.values).sort((a, b) => b[1].length - a[1].length))
      if (v) out = out.split(v).join(`{${k}}`);
    return out;
  }

  /** The names of the sensitive values in `text` (typed, or to be). */
  in(text: string): string[] {
    return Object.entries(this.values)
      .filter(([, v]) => v && text.includes(v))
      .map(([k]) => k);
  }

  /**
   * What the model asked to type, with each sensitive `{name}` in it replaced by its value (which the
   * model never saw), and the names it typed that way.
   */
  typedByName(text: string): { text: string; names: string[] } {
    const names = Object.keys(this.values).filter((k) => text.includes(`{${k}}`));
    return { text: names.reduce((t, k) => t.split(`{${k}}`).join(this.values[k]), text), names };
  }
}
