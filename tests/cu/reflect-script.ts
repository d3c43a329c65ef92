/**
 * What the reflect tests share: a scripted person filling the GTK form while the recorder records
 * (click Name, type the name, Tab, type the email, click Submit), and the scripted model's answers to
 * reflect's pass A and pass B for such a recording (the model server is the only test double).
 */
import { desktop, Recording, type Element } from '../../native/src/index.ts';
import { sleep } from '../desktop/session.ts';
import type { Episode, TurnFn } from '../fixtures/model-server/server.ts';

/** The values the person types; pass B makes them the parameters full_name and email. */
export const TYPED = { full_name: 'Ada Lovelace', email: 'ada@example.org' };

/** The text parts (prompt and captions) of a Responses request body, and how many images it carries. */
export function requestParts(body: Record<string, unknown> | null | undefined): {
  text: string;
  images: number;
} {
  let text = '';
  let images = 0;
  for (const item of (body?.input ?? []) as Array<{ content?: unknown }>) {
    if (typeof item.content === 'string') text += item.content + '\n';
    else
      for (const c of (item.content ?? []) as Array<{ type: string; text?: string }>) {
        if (c.type === 'input_image') images++;
        else if (c.text) text += c.text + '\n';
      }
  }
  return { text, images };
}

/** Pass A, scripted: describes the step it is asked about from the recorded action in its prompt. */
export const scriptedPassA =
  (title: string): TurnFn =>
  ({ body }) => {
    const text = requestParts(body).text;
    const action = JSON.parse(/The action \(ground truth[^:]*: (\{.*\})\n/.exec(text)![1]!) as {
      action_type: string;
      action: { text?: string; key?: string };
      element?: { name: string };
    };
    const el = action.element?.name ?? 'the focused field';
    return {
      text: JSON.stringify({
        expected_current_state: `The ${title} window is in front.`,
        intent: `${action.action_type} on ${el}.`,
        target: { primary: `The element "${el}"`, fallback: null },
        post_action: ['The form reacts.'],
        action_value:
          action.action_type === 'TYPE'
            ? (action.action.text ?? null)
            : action.action_type === 'KEYPRESS'
              ? action.action.key
              : null,
      }),
    };
  };

/**
 * Pass B's answer over the steps the recording really has (read from the prompt): the typed values
 * become `{full_name}` (or `nameTemplate`, e.g. a misspelt one) and `{email}`, the last click
 * (Submit) a subtask of its own, each subtask with an outcome check.
 */
export function formPassB(promptText: string, nameTemplate = '{full_name}'): Record<string, unknown> {
  const steps = JSON.parse(
    /\(i from 0\):\n([\s\S]*?)\n\nAnswer with ONE JSON/.exec(promptText)![1]!,
  ) as Array<{ i: number; action_type: string; action_value: string | null }>;
  const templ: Record<string, string> = { [TYPED.full_name]: nameTemplate, [TYPED.email]: '{email}' };
  const param = (name: string, description: string) => ({
    name,
    type: 'string',
    description,
    example: TYPED[name as keyof typeof TYPED],
    sensitive: false,
  });
  return {
    detailed_task_description: 'Fill in the name and email of the form and submit it.',
    success_criteria: 'The form says it was saved.',
    task_params: [param('full_name', 'The name.'), param('email', 'The email.')],
    subtasks: [
      {
        text: 'Enter {full_name} and {email}',
        expected_outcome: 'Name shows {full_name}, Email shows {email}.',
        outcome_check: { role: 'text', name: 'Name', value: '{full_name}' },
      },
      {
        text: 'Submit the form',
        expected_outcome: 'The form says it was saved.',
        outcome_check: { role: 'label', name: 'Save status', value: 'Saved: 1 time(s)' },
      },
    ],
    steps: steps.map((s) => ({
      i: s.i,
      subtask: s.i === steps.length - 1 ? 1 : 0,
      action_value:
        s.action_type === 'TYPE' ? (templ[s.action_value ?? ''] ?? s.action_value) : s.action_value,
    })),
  };
}

const centre = (b: [number, number, number, number]): [number, number] => [
  b[0] + Math.floor(b[2] / 2),
  b[1] + Math.floor(b[3] / 2),
];

/** The scripted model's episodes for reflect over a recording of the form `title`: pass B, then pass A. */
export function formReflectEpisodes(title: string): Episode[] {
  return [
    {
      name: 'pass-b',
      match: 'You are a workflow compiler',
      requireTools: false,
      turns: [({ body }) => ({ text: JSON.stringify(formPassB(requestParts(body).text)) })],
    },
    {
      name: 'pass-a',
      match: 'You turn one recorded step',
      requireTools: false,
      turns: [scriptedPassA(title)],
    },
  ];
}

/**
 * A person fills the form (its Name field and Submit button given) while the recorder records into
 * `dir`: click Name, type the name, Tab, type the email, click Submit. Returns the recording's id and folder.
 */
export async function recordFormFill(
  dir: string,
  name: Element,
  submit: Element,
): Promise<{ id: string; dir: string }> {
  const rec = await Recording.start({ dir });
  // A person's pace, and the recorder's reads answered before the next action however loaded the machine is.
  const pause = async (): Promise<void> => {
    await sleep(300);
    await rec.idle();
  };
  await pause();
  await desktop.click(...centre(name.bounds));
  await pause();
  await desktop.type(TYPED.full_name, { delayMs: 15 });
  await pause();
  await desktop.key('Tab');
  await pause();
  await desktop.type(TYPED.email, { delayMs: 15 });
  await pause();
  await desktop.click(...centre(submit.bounds));
  await pause();
  const summary = await rec.stop();
  return { id: summary.id, dir: summary.dir };
}
