/**
 * The scripted model's predict_action answers in the replay tests: a click on an element (at its centre
 * in the screenshot, which the tests' flows scale to half the screen), or `done`.
 */
import type { Element } from '../../native/src/index.ts';
import { imagePoint } from './cu-harness.ts';

/** A `computer_use` left click on `el` (screenshot pixels at scale 0.5), with its observation. */
export function predictClick(el: Pick<Element, 'bounds'>, observation: string) {
  return {
    toolCalls: [
      {
        name: 'computer_use',
        arguments: { action: 'left_click', ...imagePoint(el.bounds, 0.5), observation, memory: 'clicked' },
      },
    ],
  };
}

/** `done`, with the value an extract reads when given. */
export function predictDone(observation: string, value?: string) {
  return {
    toolCalls: [
      { name: 'done', arguments: { observation, memory: '', ...(value !== undefined ? { value } : {}) } },
    ],
  };
}
