/**
 * A card's workflow (`cards/<card>/schema.json`, docs/workflows.md): read, saved from the editor, and
 * installed from a reflect run. Every write goes through the one workflow schema and is atomic: an
 * invalid workflow is refused whole, with its problems, and the file keeps its last good content.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  ARTIFACTS_DIR,
  checkWorkflow,
  parseWorkflowText,
  serializeWorkflow,
  workflowFileFor,
  WORKFLOW_FILE,
  type WorkflowCheck,
} from '@runboard/supervisor/protocol';
import { writeAtomic } from './board-store.ts';
import { readRegularFileSync } from './regular-file.ts';

export interface CardWorkflow {
  /** The file, relative to the project folder's cards/ parent (for the inspector to show). */
  file: string;
  /** Absent: the card has no workflow yet. */
  text?: string;
  check?: WorkflowCheck;
}

/** The card's workflow as it is on disk, checked (a broken file comes back with its problems). */
export function readWorkflow(cardFile: string): CardWorkflow {
  const file = workflowFileFor(cardFile);
  const shown = path.join(path.basename(path.dirname(cardFile)), path.relative(path.dirname(cardFile), file));
  if (!existsSync(file)) return { file: shown };
  let text: string;
  try {
    text = readRegularFileSync(file);
  } catch (err) {
    return {
      file: shown,
      check: { ok: false, problems: [{ path: '(the file)', message: (err as Error).message }] },
    };
  }
  return { file: shown, text, check: parseWorkflowText(text) };
}

/** Saves a workflow when it is valid (whole, atomically); otherwise writes nothing and says why. */
export function saveWorkflow(cardFile: string, workflow: unknown): WorkflowCheck {
  const r = checkWorkflow(workflow);
  if (!r.ok) return r;
  const file = workflowFileFor(cardFile);
  mkdirSync(path.dirname(file), { recursive: true });
  writeAtomic(file, serializeWorkflow(r.workflow));
  return r;
}

/** Installs the workflow a reflect run wrote into its artifacts; problems when it is missing or invalid. */
export function installReflected(cardFile: string, logDir: string): WorkflowCheck {
  const made = path.join(logDir, ARTIFACTS_DIR, WORKFLOW_FILE);
  let text: string;
  try {
    text = readFileSync(made, 'utf8');
  } catch (err) {
    return {
      ok: false,
      problems: [
        { path: '(the file)', message: `the run left no ${WORKFLOW_FILE}: ${(err as Error).message}` },
      ],
    };
  }
  const r = parseWorkflowText(text);
  if (!r.ok) return r;
  try {
    return saveWorkflow(cardFile, r.workflow);
  } catch (err) {
    const file = workflowFileFor(cardFile);
    return {
      ok: false,
      problems: [{ path: '(the file)', message: `cannot write ${file}: ${(err as Error).message}` }],
    };
  }
}
