/**
 * A card's workflow (`cards/<card>/schema.json`, docs/workflows.md): read, saved from the editor, and
 * installed from a reflect run. Every write goes through the one workflow schema and is atomic: an
 * invalid workflow is refused whole, with its problems, and the file keeps its last good content.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  checkWorkflow,
  formatWorkflowProblems,
  parseWorkflowText,
  serializeWorkflow,
  workflowFileFor,
  WORKFLOW_FILE,
  WorkflowActionType,
  WorkflowParam,
  type WorkflowCheck,
} from '@runboard/supervisor/protocol';
import { writeAtomic } from './board-store.ts';
import { readRegularFileSync, readRunArtifactSync } from './regular-file.ts';
import type { CardWorkflowView } from '../shared/workflow-edit.ts';

/** The card's workflow as it is on disk, checked (a broken file comes back with its problems). */
export function workflowView(cardFile: string, projectDir: string): CardWorkflowView {
  const file = workflowFileFor(cardFile);
  const shown = {
    file: path.relative(projectDir, file),
    actionTypes: [...WorkflowActionType.options],
    paramTypes: [...WorkflowParam.shape.type.options],
  };
  if (!existsSync(file)) return { ...shown, problems: [] };
  let text: string;
  try {
    text = readRegularFileSync(file, { noFollow: true });
  } catch (err) {
    return { ...shown, problems: [{ path: '(the file)', message: (err as Error).message }] };
  }
  const r = parseWorkflowText(text);
  return r.ok
    ? { ...shown, text, workflow: r.workflow, problems: [] }
    : { ...shown, text, problems: r.problems };
}

/**
 * Saves a workflow when it is valid (whole, atomically); otherwise writes nothing and says why. With
 * `base` (the text the editor opened; null: there was no file), a file changed meanwhile is not overwritten.
 */
export function saveWorkflow(cardFile: string, workflow: unknown, base?: string | null): WorkflowCheck {
  const r = checkWorkflow(workflow);
  if (!r.ok) return r;
  const file = workflowFileFor(cardFile);
  const changed = {
    ok: false as const,
    problems: [
      {
        path: '(the file)',
        message: `${WORKFLOW_FILE} changed since the editor opened it (another edit, or a reflect run): reopen it and edit again`,
      },
    ],
  };
  if (base === null && existsSync(file)) return changed;
  mkdirSync(path.dirname(file), { recursive: true });
  if (!writeAtomic(file, serializeWorkflow(r.workflow), base ?? undefined)) return changed;
  return r;
}

/** Installs the workflow a reflect run wrote into its artifacts; problems when it is missing or invalid. */
export function installReflected(cardFile: string, logDir: string): WorkflowCheck {
  let text: string;
  try {
    text = readRunArtifactSync(logDir, WORKFLOW_FILE);
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

/**
 * What the host does with a run's outcome before the card may count it as succeeded, on every path
 * that runs a card (the board's scheduler, `runboard run`): a reflect run's workflow is installed into
 * the card's folder, valid and whole. undefined: nothing to install; else whether it was.
 */
export function settleSucceededRun(
  cardFile: string,
  result: { runner: string; logDir: string },
): WorkflowCheck | undefined {
  return result.runner === 'reflect' ? installReflected(cardFile, result.logDir) : undefined;
}

/**
 * The board's side of settleSucceededRun (the scheduler is given it by the composition): why a
 * succeeded run counts as failed after all (a reflect run's workflow joins the card only valid and
 * whole), or undefined when its result stands.
 */
export function succeededRunNotKept(
  cardFile: string,
  result: { runner: string; logDir: string },
): string | undefined {
  const installed = settleSucceededRun(cardFile, result);
  if (!installed || installed.ok) return undefined;
  return `the workflow reflect made was not saved:\n${formatWorkflowProblems(installed.problems)}`;
}
