/** What changed in config.yaml outside the board, in words for the board's banner (board-store.ts). */
import type { ProjectConfig } from './project.ts';

/** What changed between the confirmed config and a changed one, in words for the board's banner. */
export function configChanges(before: ProjectConfig, after: ProjectConfig): string[] {
  const out: string[] = [];
  const same = (x: unknown, y: unknown): boolean => JSON.stringify(x) === JSON.stringify(y);
  for (const [name, f] of Object.entries(after.flows)) {
    const was = Object.hasOwn(before.flows, name) ? before.flows[name] : undefined;
    if (!was) {
      out.push(
        `new flow "${name}" (runner ${f.runner}${f.sandbox ? ', with its own sandbox settings' : ''})`,
      );
      continue;
    }
    const keys = [...new Set([...Object.keys(was), ...Object.keys(f)])].filter(
      (k) => !same((was as Record<string, unknown>)[k], (f as Record<string, unknown>)[k]),
    );
    if (keys.length) out.push(`flow "${name}": ${keys.join(', ')} changed`);
  }
  for (const name of Object.keys(before.flows))
    if (!Object.hasOwn(after.flows, name)) out.push(`flow "${name}" removed`);
  for (const key of ['scheduler', 'redis', 'llm_profiles', 'vision_profiles'] as const)
    if (!same(before[key], after[key])) out.push(`${key} changed`);
  if (out.length === 0) out.push('config.yaml changed (nothing the board uses: comments or layout)');
  return out;
}
