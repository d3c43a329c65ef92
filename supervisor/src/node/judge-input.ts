/**
 * A judge run's input (runner judge; host/src/core/attempts.ts): each attempt it judges, copied from
 * that attempt's log folder into the judge's own artifacts folder, `attempts/<n>/`: `end.json` (how the
 * attempt ended, its summary), `report.md` (its step reports) and `final.jpg` (its last screenshot).
 * The judge run reads only its own folder (the state root stays hidden from it); the supervisor copies,
 * and only runs of the judge's own card.
 */
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ARTIFACTS_DIR, type RunResult } from '../protocol/index.ts';

/** `attempts/<n>` of the judge's artifacts folder, n from 1, in the order given. */
export const JUDGE_ATTEMPTS_DIR = 'attempts';

export class JudgeInputError extends Error {}

/** Copies each judged run's end, report and final screenshot into `artifactsDir/attempts/<n>`. */
export async function gatherJudgeInput(
  runs: readonly string[],
  logDirOf: (runId: string) => string,
  cardPath: string,
  artifactsDir: string,
): Promise<void> {
  for (const [i, runId] of runs.entries()) {
    const from = logDirOf(runId);
    let result: RunResult;
    try {
      result = JSON.parse(await readFile(path.join(from, 'result.json'), 'utf8')) as RunResult;
    } catch (err) {
      throw new JudgeInputError(
        `attempt ${i + 1} (run ${runId}) has no readable result: ${(err as Error).message}`,
      );
    }
    if (result.card?.path !== cardPath)
      throw new JudgeInputError(
        `run ${runId} is not an attempt of this card (${cardPath}): a judge reads its own card's runs only`,
      );
    if (result.status === 'running')
      throw new JudgeInputError(`attempt ${i + 1} (run ${runId}) has not ended`);
    const to = path.join(artifactsDir, JUDGE_ATTEMPTS_DIR, String(i + 1));
    await mkdir(to, { recursive: true, mode: 0o700 });
    await writeFile(
      path.join(to, 'end.json'),
      JSON.stringify({
        runId,
        status: result.status,
        summary: result.summary,
        reason: result.termination?.reason ?? null,
        detail: result.termination?.detail ?? null,
      }),
    );
    const art = path.join(from, ARTIFACTS_DIR);
    const files = await readdir(art).catch(() => [] as string[]);
    if (files.includes('report.md')) await copyFile(path.join(art, 'report.md'), path.join(to, 'report.md'));
    const last = files
      .filter((f) => /^step-\d+\.(jpg|png)$/.test(f))
      .sort()
      .at(-1);
    if (last) await copyFile(path.join(art, last), path.join(to, `final${path.extname(last)}`));
  }
}
