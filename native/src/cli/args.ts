// desktop-cli's flags: node:util's parseArgs in strict mode, for long options of type string or
// boolean only (what COMMANDS declares), with its results and its error messages. Written out because
// Node compiles parseArgs's own modules at their first use, ~1 ms of every command's start-up; the
// tests (args.test.ts) hold the two to the same answers.

export interface FlagSpec {
  type: 'string' | 'boolean';
}

export interface ParsedFlags {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

const own = (o: object, k: string) => Object.prototype.hasOwnProperty.call(o, k);

export function parseFlags(
  args: string[],
  options: Record<string, FlagSpec>,
  allowPositionals: boolean,
): ParsedFlags {
  const values: Record<string, string | boolean | undefined> = Object.create(null) as Record<
    string,
    string | boolean | undefined
  >;
  const positionals: string[] = [];
  const positional = (arg: string) => {
    if (!allowPositionals)
      throw new Error(`Unexpected argument '${arg}'. This command does not take positional arguments`);
    positionals.push(arg);
  };
  const isString = (name: string) => own(options, name) && options[name]!.type === 'string';
  const rest = [...args];
  while (rest.length > 0) {
    const arg = rest.shift()!;
    if (arg === '--') {
      for (const p of rest) positional(p);
      break;
    }
    if (arg.length < 2 || arg[0] !== '-') {
      positional(arg);
      continue;
    }
    let name: string;
    let rawName: string;
    let value: string | undefined;
    let inline = false;
    if (arg[1] !== '-') {
      // Short: no option declares one, so "-x" stands for the option named "x" (if any).
      name = arg[1]!;
      rawName = `-${name}`;
      if (arg.length > 2 && isString(name)) {
        value = arg.slice(2); // -x5
        inline = true;
      } else if (arg.length > 2) {
        // -abc is -a -b -c; a string option inside takes the rest as its value (-abx5: -a -b -x5)
        const expanded: string[] = [];
        for (let j = 1; j < arg.length; j++) {
          if (!isString(arg[j]!) || j === arg.length - 1) expanded.push(`-${arg[j]}`);
          else {
            expanded.push(`-${arg.slice(j)}`);
            break;
          }
        }
        rest.unshift(...expanded);
        continue;
      } else if (isString(name) && rest.length > 0) value = rest.shift();
    } else if (arg.includes('=', 3)) {
      const eq = arg.indexOf('=');
      name = arg.slice(2, eq);
      rawName = `--${name}`;
      value = arg.slice(eq + 1);
      inline = true;
    } else {
      name = arg.slice(2);
      rawName = arg;
      // A string option takes the next argument, whatever it looks like (refused below if it looks
      // like an option).
      if (isString(name) && rest.length > 0) value = rest.shift();
    }
    if (!own(options, name))
      throw new Error(
        `Unknown option '${rawName}'` +
          (allowPositionals
            ? `. To specify a positional argument starting with a '-', place it at the end of the command after '--', as in '-- ${JSON.stringify(rawName)}`
            : ''),
      );
    const type = options[name]!.type;
    if (type === 'string' && value === undefined)
      throw new Error(`Option '--${name} <value>' argument missing`);
    if (type === 'boolean' && value !== undefined)
      throw new Error(`Option '--${name}' does not take an argument`);
    if (!inline && value !== undefined && value.length > 1 && value[0] === '-') {
      const example = rawName.startsWith('--') ? `'${rawName}=-XYZ'` : `'--${name}=-XYZ' or '${rawName}-XYZ'`;
      throw new Error(
        `Option '${rawName}' argument is ambiguous.\nDid you forget to specify the option argument for '${rawName}'?\nTo specify an option argument starting with a dash use ${example}.`,
      );
    }
    if (name !== '__proto__') values[name] = value ?? true;
  }
  return { values, positionals };
}
