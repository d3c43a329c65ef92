/**
 * The one way Runboard hands an untrusted media file (a run's, an imported one, a recording's video) to
 * ffprobe or ffmpeg: the host's probe of an .mp4 to extract, the extract runner's frames, analyze_media.
 * ffmpeg otherwise guesses the format from the content, and a playlist saved as .mp4 (HLS, ffconcat)
 * makes it open the files it names, outside the run's workspace too (the host's ffprobe runs unjailed).
 * Here the demuxer is pinned by the file's extension, the only protocol is `file`, and the input is a
 * `file:` URL of the absolute path (a name like `concat:a|b.mp4` or `-i` is no protocol or option).
 * The mov demuxer's external references (drefs) are off by default.
 */
import path from 'node:path';

/** Video extensions (lower case) and the one ffmpeg demuxer each is read with. */
export const VIDEO_DEMUXERS: Readonly<Record<string, string>> = {
  '.mp4': 'mov',
  '.m4v': 'mov',
  '.mov': 'mov',
  '.webm': 'matroska',
  '.mkv': 'matroska',
  '.avi': 'avi',
};

/** The file's extension names no video format read here. */
export class UnknownMediaType extends Error {}

/**
 * ffprobe/ffmpeg input options for `file` (they go where `-i FILE` would, after any seek options):
 * `-protocol_whitelist file -f DEMUXER -i file:/abs/path`.
 */
export function mediaInput(file: string): string[] {
  const ext = path.extname(file).toLowerCase();
  const demuxer = Object.hasOwn(VIDEO_DEMUXERS, ext) ? VIDEO_DEMUXERS[ext]! : undefined;
  if (!demuxer)
    throw new UnknownMediaType(
      `${path.basename(file)}: not a video file this reads (${Object.keys(VIDEO_DEMUXERS).join(' ')})`,
    );
  return ['-protocol_whitelist', 'file', '-f', demuxer, '-i', `file:${path.resolve(file)}`];
}

/** ffprobe's arguments that print the duration in seconds of `file` (read through mediaInput). */
export function durationArgs(file: string): string[] {
  return ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', ...mediaInput(file)];
}

/** The seconds in ffprobe's answer to durationArgs(), or undefined when it gives none (N/A, empty, 0). */
export function parseDuration(stdout: string): number | undefined {
  const s = Number.parseFloat(stdout.trim());
  return Number.isFinite(s) && s > 0 ? s : undefined;
}
