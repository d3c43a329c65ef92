/** Settings → Disk: the space the project's run logs, their artifacts and its recordings take. */
import { useEffect, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { DiskUsageView } from '../shared/board-types.ts';

function size(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

const TRIGGER = {
  interval: 'its interval',
  'low-space': 'free space below minFree',
  'disk-full': 'the disk was full',
} as const;

export function DiskSection({ api }: { api: BoardApi }) {
  const [d, setD] = useState<DiskUsageView>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    api.diskUsage().then(setD, (e: Error) => setError(e.message));
  }, [api]);
  if (error) return <p className="error small">Disk use: {error}</p>;
  if (!d) return null;
  return (
    <section className="providers disk" aria-labelledby="disk-title">
      <h3 id="disk-title">Disk</h3>
      <dl className="disk-use">
        <dt>Run logs</dt>
        <dd>
          {size(d.runLogs)} ({d.runs} run{d.runs === 1 ? '' : 's'})
        </dd>
        <dt>Artifacts</dt>
        <dd>{size(d.artifacts)}</dd>
        <dt>Recordings</dt>
        <dd>
          {size(d.recordings)} ({d.recordingCount})
        </dd>
        <dt>Workspace copies</dt>
        <dd>
          {size(d.copies)} ({d.copyCount} not kept or discarded)
        </dd>
      </dl>
      <p className="muted small">
        Retention: {d.policy}. <code>runboard gc</code> says what it would remove;{' '}
        <code>runboard gc --yes</code> removes it (never a run going, what a card names, or a run whose
        worktree or copy you have not kept or discarded).
      </p>
      <p className="muted small">Retention is {d.auto}.</p>
      {d.lastAuto && (
        <p className="small disk-last-auto">
          Last removed by the supervisor ({TRIGGER[d.lastAuto.trigger]},{' '}
          {new Date(d.lastAuto.at).toLocaleString()}): {d.lastAuto.removedRuns} run log
          {d.lastAuto.removedRuns === 1 ? '' : 's'}, {d.lastAuto.removedCopies} workspace cop
          {d.lastAuto.removedCopies === 1 ? 'y' : 'ies'}, {d.lastAuto.removedRecordings} recording
          {d.lastAuto.removedRecordings === 1 ? '' : 's'}; {size(d.lastAuto.freed)} freed
          {d.lastAuto.errors ? `; ${d.lastAuto.errors} could not be removed (see supervisor.log)` : ''}.
        </p>
      )}
    </section>
  );
}
