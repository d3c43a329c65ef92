/**
 * A video the person gives the board from their computer (the browser's file chooser, `runboard
 * serve`): its bytes are written into the project's `videos/` folder, where an extraction run can read
 * them as it reads an .mp4 named by its path (extract.ts). The folder lies in the project, which runs
 * may write: it is used only as a real folder of the project (never a link), the file is made new
 * (never over another, never through a link), with a temporary name until every byte arrived, and
 * removed when the upload breaks off or goes over the limit.
 */
import { constants, type Stats } from 'node:fs';
import { link, lstat, mkdir, open, realpath, unlink } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { diskError } from './disk-error.ts';

/** An upload the person can fix (too big, empty, a `videos` that is not a folder): said in words. */
export class VideoImportRefused extends Error {}

/** `name` as a file name of the videos folder: its letters kept, anything else a dash, `.mp4` at the end. */
export function videoFileName(name: string): string {
  const base = path
    .basename(name.replace(/\\/g, '/'))
    .replace(/\.mp4$/i, '')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[.-]+|[.-]+$/g, '')
    .slice(0, 80);
  return `${base || 'video'}.mp4`;
}

/** `name.mp4`, else `name-2.mp4`, … : the names tried in turn for a new file. */
export function* candidateNames(fileName: string): Generator<string> {
  yield fileName;
  const stem = fileName.replace(/\.mp4$/, '');
  for (let n = 2; n < 1000; n++) yield `${stem}-${n}.mp4`;
}

/** The project's `videos/` folder, made when missing; refused when something else has its name. */
async function videosFolder(projectDir: string): Promise<string> {
  const dir = path.join(projectDir, 'videos');
  await mkdir(dir, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw diskError(err, projectDir);
  });
  const st: Stats = await lstat(dir);
  // a run that may write the project could have put a link here, to make the board write elsewhere
  if (!st.isDirectory() || (await realpath(dir)) !== path.join(await realpath(projectDir), 'videos'))
    throw new VideoImportRefused(
      `${dir} is not a folder of the project (a link or a file has its name): move it away and import again`,
    );
  return dir;
}

/**
 * Writes `body` (at most `maxBytes`; `declared`, the request's Content-Length, is checked first) into
 * the project's `videos/` folder as a new file named after `name`; answers its path.
 */
export async function importVideo(
  projectDir: string,
  name: string,
  body: Readable,
  opts: { maxBytes: number; declared?: number | undefined },
): Promise<string> {
  const limit = `over the ${(opts.maxBytes / 1024 ** 3).toFixed(0)} GB limit: trim it and import again`;
  if (opts.declared !== undefined && opts.declared > opts.maxBytes)
    throw new VideoImportRefused(`${name} is ${(opts.declared / 1024 ** 3).toFixed(2)} GB, ${limit}`);
  const dir = await videosFolder(projectDir);
  const temp = path.join(dir, `.import-${randomBytes(8).toString('hex')}.part`);
  const fh = await open(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  ).catch((err: unknown) => {
    throw diskError(err, dir);
  });
  let bytes = 0;
  try {
    try {
      for await (const chunk of body) {
        const b = chunk as Buffer;
        bytes += b.length;
        if (bytes > opts.maxBytes) throw new VideoImportRefused(`${name} is ${limit}`);
        for (let done = 0; done < b.length;) done += (await fh.write(b, done, b.length - done)).bytesWritten;
      }
    } finally {
      await fh.close();
    }
    if (bytes === 0) throw new VideoImportRefused(`${name} arrived empty: choose the video again`);
    if (opts.declared !== undefined && bytes !== opts.declared)
      throw new VideoImportRefused(
        `${name} arrived cut short (${bytes} of ${opts.declared} bytes): import it again`,
      );
    // a new name, never over a file that is there: link(2) fails on one that exists
    for (const candidate of candidateNames(videoFileName(name))) {
      const file = path.join(dir, candidate);
      try {
        await link(temp, file);
        return file;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw diskError(err, dir);
      }
    }
    throw new VideoImportRefused(
      `${dir} already holds 1000 videos named like ${name}: rename it and import again`,
    );
  } catch (err) {
    // the body's own error (the browser went away) says nothing a person can act on
    if (err instanceof VideoImportRefused) throw err;
    throw diskError(err, dir);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}
