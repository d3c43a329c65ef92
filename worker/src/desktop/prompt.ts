/**
 * A desktop runner's prompt folder (prompt.md + config.yaml: computer-use's, replay's): no prompt text in
 * code. Its rendering is models/prompt.ts (fill), as are its prices (estimateCost).
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import type { DocumentToolName } from '../tools/documents/tools.ts';
import type { ToolName } from './tools.ts';

export interface PromptConfig {
  version: number;
  llm: {
    provider?: string;
    model?: string;
    max_output_tokens?: number;
    pricing?: Record<string, { input: number; output: number }>;
  };
  screenshot_caption: string;
  /** Descriptions of the desktop tools (required) and of the document tools (their own by default). */
  tools: Record<ToolName, string> & Partial<Record<DocumentToolName, string>>;
}

/** A prompt folder's config whose tools are another runner's (replay: computer_use, done, stuck). */
export type PromptConfigOf<T extends string> = Omit<PromptConfig, 'tools'> & { tools: Record<T, string> };

export interface PromptFolder {
  template: string;
  config: PromptConfig;
  folder: string;
}

export function loadPromptFolder(folder: string): PromptFolder;
export function loadPromptFolder<T extends string>(
  folder: string,
  tools: readonly T[],
): { template: string; config: PromptConfigOf<T>; folder: string };
/** Reads prompt.md and config.yaml; config.yaml must describe each of `tools` (default: the loop's). */
export function loadPromptFolder(
  folder: string,
  tools: readonly string[] = ['desktop_action', 'desktop_read', 'terminal_exec'],
): { template: string; config: PromptConfigOf<string>; folder: string } {
  const read = (f: string): string => {
    try {
      return readFileSync(path.join(folder, f), 'utf8');
    } catch (err) {
      throw new Error(`cannot read the flow's prompt ${path.join(folder, f)}: ${(err as Error).message}`);
    }
  };
  const template = read('prompt.md');
  const config = parse(read('config.yaml')) as Partial<PromptConfig> | null;
  if (!config || typeof config.version !== 'number' || !config.llm)
    throw new Error(`${path.join(folder, 'config.yaml')} needs at least \`version\` and \`llm\``);
  for (const t of tools)
    if (typeof (config.tools as Record<string, unknown> | undefined)?.[t] !== 'string')
      throw new Error(`${path.join(folder, 'config.yaml')} has no description for tool ${t} (tools.${t})`);
  if (typeof config.screenshot_caption !== 'string')
    throw new Error(`${path.join(folder, 'config.yaml')} has no screenshot_caption`);
  return { template, config: config as PromptConfigOf<string>, folder };
}

/** The OS line of the prompt: distribution, kernel, display server. */
export function osVersion(env: NodeJS.ProcessEnv): string {
  let distro = os.type();
  try {
    const rel = readFileSync('/etc/os-release', 'utf8');
    const m = /^PRETTY_NAME="?([^"\n]*)"?/m.exec(rel);
    if (m) distro = m[1]!;
  } catch {
    // not Linux, or no os-release
  }
  const session = env.WAYLAND_DISPLAY
    ? 'Wayland'
    : env.DISPLAY
      ? `X11 (DISPLAY ${env.DISPLAY})`
      : 'no display';
  return `${distro}, ${os.type()} ${os.release()} ${os.arch()}, ${session}`;
}
