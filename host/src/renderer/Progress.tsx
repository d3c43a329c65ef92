/** A run's progress as a bar, announced as a progressbar (indeterminate while the run says no fraction). */
export function ProgressBar({ fraction }: { fraction: number | undefined }) {
  const pct = fraction === undefined ? undefined : Math.round(fraction * 100);
  return (
    <div
      className="progress"
      role="progressbar"
      aria-label="progress"
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={pct}
    >
      <div className={pct === undefined ? 'bar indeterminate' : 'bar'} style={{ width: `${pct ?? 30}%` }} />
    </div>
  );
}
