// The one definition of desktop-cli's commands and flags: the CLI parses with it (node:util parseArgs),
// `--help` prints it, and `desktop-cli serve` makes an MCP tool of each command from it. Names follow
// the public desktop-cli (mj1618/desktop-cli) so its scripts and prompts run unchanged.
import type { ParseArgsConfig } from 'node:util';

export type Options = NonNullable<ParseArgsConfig['options']>;

export interface CommandSpec {
  options: Options;
  /** The usage line(s) of `--help`. */
  help: string;
  /** One sentence: what it does (the MCP tool's description). */
  summary: string;
  positionals?: boolean;
  /** Flags that take several values (`--field a=1 --field b=2`). */
  multiple?: string[];
}

const TARGET = {
  app: { type: 'string' },
  window: { type: 'string' },
  'window-id': { type: 'string' },
  pid: { type: 'string' },
} as const;

/** --text/--roles/--exact/--scope-id: act on an element found by its text (the flag's name varies). */
const byText = (flag: 'text' | 'target') =>
  ({
    [flag]: { type: 'string' },
    roles: { type: 'string' },
    exact: { type: 'boolean' },
    'scope-id': { type: 'string' },
    'no-auto-scope': { type: 'boolean' },
    ref: { type: 'string' },
  }) as const;

const POST_READ = {
  'post-read': { type: 'boolean' },
  'post-read-delay': { type: 'string' },
  'post-read-max-elements': { type: 'string' },
} as const;

const VERIFY = {
  verify: { type: 'boolean' },
  'verify-delay': { type: 'string' },
  'max-retries': { type: 'string' },
} as const;

/** Every command but screenshot (whose --format is the image's) takes these. */
export const GLOBAL = {
  format: { type: 'string' },
  pretty: { type: 'boolean' },
  raw: { type: 'boolean' },
  'no-display': { type: 'boolean' },
} as const;

const T = '[--app <name>] [--window <title>] [--window-id <id>] [--pid <pid>]';
const TEXT = '[--text <text> [--roles r,..] [--exact] [--scope-id <id>] | --ref <ref> | --id <id>]';
const PR = '[--post-read [--post-read-delay <ms>] [--post-read-max-elements <n>]]';
const VF = '[--verify [--verify-delay <ms>] [--max-retries <n>]]';

export const COMMANDS: Record<string, CommandSpec> = {
  list: {
    options: {
      apps: { type: 'boolean' },
      windows: { type: 'boolean' },
      monitors: { type: 'boolean' },
      pid: { type: 'string' },
      app: { type: 'string' },
    },
    summary: 'List windows (default), running apps (--apps) or monitors (--monitors).',
    help: 'desktop-cli list [--apps | --windows | --monitors] [--pid <pid>] [--app <name>] [--pretty]',
  },
  read: {
    options: {
      ...TARGET,
      depth: { type: 'string' },
      roles: { type: 'string' },
      'visible-only': { type: 'boolean' },
      bbox: { type: 'string' },
      compact: { type: 'boolean' },
      text: { type: 'string' },
      exact: { type: 'boolean' },
      flat: { type: 'boolean' },
      prune: { type: 'boolean' },
      focused: { type: 'boolean' },
      'scope-id': { type: 'string' },
      children: { type: 'boolean' },
      'max-elements': { type: 'string' },
      since: { type: 'string' },
      scale: { type: 'string' },
      'screenshot-output': { type: 'string' },
      'image-format': { type: 'string' },
      quality: { type: 'string' },
      'all-elements': { type: 'boolean' },
    },
    summary:
      "Read a window's accessibility tree (compact keys: i id, r role, t title, v value, d description, b bounds, f focused, e enabled, s selected, c children, a actions).",
    help:
      `desktop-cli read ${T} [--depth <n>] [--roles btn,input,..|interactive]\n` +
      '    [--visible-only[=false]] [--bbox x,y,w,h] [--compact] [--text <t> [--exact]] [--flat] [--prune]\n' +
      '    [--focused] [--scope-id <id> [--children]] [--max-elements <n>] [--since <ts>]\n' +
      '    [--format json|yaml|agent] [--pretty]\n' +
      '    [--format screenshot [--scale 0.1-1.0] [--screenshot-output <path>] [--image-format png|jpg] [--quality n] [--all-elements]]',
  },
  find: {
    options: {
      text: { type: 'string' },
      roles: { type: 'string' },
      app: { type: 'string' },
      limit: { type: 'string' },
      exact: { type: 'boolean' },
    },
    summary: 'Find elements by text across all windows (or all windows of an app), grouped by window.',
    help: 'desktop-cli find --text <text> [--roles r,..] [--app <name>] [--limit <n>] [--exact]',
  },
  click: {
    options: {
      ...TARGET,
      ...byText('text'),
      ...POST_READ,
      ...VERIFY,
      id: { type: 'string' },
      x: { type: 'string' },
      y: { type: 'string' },
      button: { type: 'string' },
      double: { type: 'boolean' },
      near: { type: 'boolean' },
      'near-direction': { type: 'string' },
    },
    summary: 'Click an element (by id, text or ref), the control nearest a text (--near), or a screen point.',
    help: `desktop-cli click (${TEXT.slice(1, -1)} | --x <x> --y <y>) [--button left|right|middle] [--double]\n    [--near [--near-direction left|right|up|down]] ${T} ${PR} ${VF}`,
  },
  hover: {
    options: {
      ...TARGET,
      ...byText('text'),
      ...POST_READ,
      id: { type: 'string' },
      x: { type: 'string' },
      y: { type: 'string' },
    },
    summary: 'Move the pointer over an element or a point without clicking (tooltips, hover menus).',
    help: `desktop-cli hover (${TEXT.slice(1, -1)} | --x <x> --y <y>) ${T} ${PR}`,
  },
  type: {
    options: {
      ...TARGET,
      ...byText('target'),
      ...POST_READ,
      ...VERIFY,
      text: { type: 'string' },
      key: { type: 'string' },
      delay: { type: 'string' },
      id: { type: 'string' },
    },
    positionals: true,
    summary:
      'Type text and/or press a key combination, into an element (by id, text or ref) or the focused window.',
    help: `desktop-cli type [--text <text> | <text>] [--key <combo>] [--delay <ms>]\n    [--target <text> [--roles r,..] [--exact] | --ref <ref> | --id <id>] ${T} ${PR} ${VF}`,
  },
  'set-value': {
    options: {
      ...TARGET,
      ...byText('text'),
      ...POST_READ,
      ...VERIFY,
      id: { type: 'string' },
      value: { type: 'string' },
      attribute: { type: 'string' },
    },
    summary:
      "Set an element's value through the accessibility API (a field's text, a slider's number), or its focused/selected state.",
    help: `desktop-cli set-value ${TEXT} --value <value> [--attribute value|focused|selected] ${T} ${PR} ${VF}`,
  },
  fill: {
    options: {
      ...TARGET,
      ...POST_READ,
      field: { type: 'string' },
      submit: { type: 'string' },
      'tab-between': { type: 'boolean' },
      method: { type: 'string' },
    },
    multiple: ['field'],
    summary:
      'Fill several form fields from one read ("Label=value" or "id:42=value"), then optionally click a submit button.',
    help: `desktop-cli fill --field "Label=value" [--field "id:42=value" ...] [--submit <text>] [--method set-value|type]\n    [--tab-between] ${T} ${PR}   (or the fields as YAML on stdin)`,
  },
  focus: {
    options: { ...TARGET, 'new-document': { type: 'boolean' } },
    summary: 'Focus and raise a window by app, title, window id or pid.',
    help: 'desktop-cli focus (--app <name> | --window <title> | --window-id <id> | --pid <pid>) [--new-document]',
  },
  scroll: {
    options: {
      ...TARGET,
      ...byText('text'),
      direction: { type: 'string' },
      amount: { type: 'string' },
      x: { type: 'string' },
      y: { type: 'string' },
      id: { type: 'string' },
    },
    summary:
      'Scroll at an element, a point or the window: direction up/down/left/right, amount in wheel clicks.',
    help: `desktop-cli scroll [--direction up|down|left|right] [--amount <n>] [--x <x> --y <y> | ${TEXT.slice(1, -1)}] ${T}`,
  },
  drag: {
    options: {
      ...TARGET,
      'from-x': { type: 'string' },
      'from-y': { type: 'string' },
      'to-x': { type: 'string' },
      'to-y': { type: 'string' },
      'from-id': { type: 'string' },
      'to-id': { type: 'string' },
      'from-text': { type: 'string' },
      'to-text': { type: 'string' },
      'from-ref': { type: 'string' },
      'to-ref': { type: 'string' },
      roles: { type: 'string' },
      exact: { type: 'boolean' },
    },
    summary: 'Drag from an element or point to an element or point.',
    help: `desktop-cli drag (--from-x <x> --from-y <y> | --from-id <id> | --from-text <t> | --from-ref <r>)\n    (--to-x <x> --to-y <y> | --to-id <id> | --to-text <t> | --to-ref <r>) [--roles r,..] [--exact] ${T}`,
  },
  action: {
    options: {
      ...TARGET,
      ...byText('text'),
      ...POST_READ,
      ...VERIFY,
      id: { type: 'string' },
      action: { type: 'string' },
      name: { type: 'string' },
    },
    summary:
      "Perform an element's accessibility action (press, increment, decrement, pick, cancel, …) without a synthetic click.",
    help: `desktop-cli action ${TEXT} [--action press|increment|decrement|pick|cancel|<platform name>] ${T} ${PR} ${VF}`,
  },
  wait: {
    options: {
      ...TARGET,
      'for-text': { type: 'string' },
      'for-role': { type: 'string' },
      'for-id': { type: 'string' },
      gone: { type: 'boolean' },
      timeout: { type: 'string' },
      interval: { type: 'string' },
      depth: { type: 'string' },
      roles: { type: 'string' },
    },
    summary:
      'Wait until an element (by text, role or id) appears, or is gone with --gone; exit 1 on timeout.',
    help: `desktop-cli wait (--for-text <t> | --for-role <r> | --for-id <id>) [--gone] [--timeout <s>] [--interval <ms>]\n    [--depth <n>] [--roles r,..] ${T}`,
  },
  assert: {
    options: {
      ...TARGET,
      ...byText('text'),
      id: { type: 'string' },
      value: { type: 'string' },
      'value-contains': { type: 'string' },
      checked: { type: 'boolean' },
      unchecked: { type: 'boolean' },
      disabled: { type: 'boolean' },
      enabled: { type: 'boolean' },
      'is-focused': { type: 'boolean' },
      gone: { type: 'boolean' },
      timeout: { type: 'string' },
      interval: { type: 'string' },
    },
    summary:
      "Check an element's existence or state (value, checked, enabled, focused, gone); exit 1 when it fails.",
    help: `desktop-cli assert ${TEXT} [--value <v> | --value-contains <v>] [--checked | --unchecked]\n    [--enabled | --disabled] [--is-focused] [--gone] [--timeout <s>] [--interval <ms>] ${T}`,
  },
  observe: {
    options: {
      ...TARGET,
      depth: { type: 'string' },
      roles: { type: 'string' },
      interval: { type: 'string' },
      duration: { type: 'string' },
      'ignore-bounds': { type: 'boolean' },
      'ignore-focus': { type: 'boolean' },
    },
    summary:
      "Watch a window's tree and print its changes as JSON lines (snapshot, added, removed, changed, error, done).",
    help: `desktop-cli observe ${T} [--depth <n>] [--roles r,..] [--interval <ms>] [--duration <s>] [--ignore-bounds] [--ignore-focus]`,
  },
  screenshot: {
    options: {
      ...TARGET,
      output: { type: 'string' },
      format: { type: 'string' },
      quality: { type: 'string' },
      scale: { type: 'string' },
      pretty: { type: 'boolean' },
    },
    summary: 'A screenshot of the screen or one window (cursor drawn in), scaled.',
    help: 'desktop-cli screenshot [--window <title>] [--app <name>] [--output <path>|-] [--format png|jpg] [--quality 1-100] [--scale 0.1-1.0]',
  },
  'screenshot-coords': {
    options: {
      ...TARGET,
      output: { type: 'string' },
      format: { type: 'string' },
      quality: { type: 'string' },
      scale: { type: 'string' },
      'all-elements': { type: 'boolean' },
      roles: { type: 'string' },
      depth: { type: 'string' },
      text: { type: 'string' },
      prune: { type: 'boolean' },
      pretty: { type: 'boolean' },
    },
    summary:
      "A screenshot with each (interactive) element boxed in red and its centre's screen coordinates written at its centre.",
    help: 'desktop-cli screenshot-coords [--app <name>] [--window <title>] [--output <path>|-] [--format png|jpg] [--quality n]\n    [--scale 0.1-1.0] [--all-elements] [--roles r,..] [--depth n] [--text t] [--prune]',
  },
  clipboard: {
    options: { ...TARGET, text: { type: 'string' } },
    positionals: true,
    summary: 'The clipboard: read, write <text>, clear, or grab (select all + copy in a window, then read).',
    help: `desktop-cli clipboard (read | write [--text] <text> | clear | grab ${T})`,
  },
  open: {
    options: {
      ...POST_READ,
      url: { type: 'string' },
      file: { type: 'string' },
      app: { type: 'string' },
      wait: { type: 'boolean' },
      timeout: { type: 'string' },
    },
    positionals: true,
    summary: "Open a URL or file with the desktop's handler (xdg-open) or an app, or launch an app.",
    help: `desktop-cli open [<url|file> | --url <url> | --file <path>] [--app <command>] [--wait [--timeout <s>]] ${PR}`,
  },
  do: {
    options: { app: { type: 'string' }, window: { type: 'string' }, 'stop-on-error': { type: 'boolean' } },
    summary:
      'Run a batch of steps (a YAML list on stdin: click, hover, type, action, set-value, fill, scroll, wait, assert, focus, read, open, sleep, if-exists, if-focused, try).',
    help: 'desktop-cli do [--app <name>] [--window <title>] [--stop-on-error[=false]] < steps.yaml',
  },
};

export const SERVE_HELP =
  'desktop-cli serve [--transport stdio|streamable-http] [--port <n>]   (an MCP server: every command above as a tool;\n' +
  '    on stdio, or on http://127.0.0.1:<port>/mcp with the token it prints on stderr)';

/** The options a command parses: its own, plus the global ones it does not define itself. */
export function optionsOf(spec: CommandSpec): Options {
  const o: Options = { ...spec.options };
  for (const [k, v] of Object.entries(GLOBAL)) if (!(k in o)) o[k] = v;
  for (const m of spec.multiple ?? []) o[m] = { ...o[m]!, multiple: true };
  return o;
}
