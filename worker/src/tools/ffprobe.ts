/** A video's duration as ffprobe prints it: the one probe the extract runner and analyze_media share. */

/** ffprobe's arguments that print the duration in seconds of `input` (a path, or demuxer options, -i, path). */
export function durationArgs(input: string[]): string[] {
  return ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', ...input];
}

/** The seconds in ffprobe's answer to durationArgs(), or undefined when it gives none (N/A, empty, 0). */
export function parseDuration(stdout: string): number | undefined {
  const s = Number.parseFloat(stdout.trim());
  return Number.isFinite(s) && s > 0 ? s : undefined;
}
