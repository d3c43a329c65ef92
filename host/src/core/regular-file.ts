/** Reading files a person (or a run) can put anything in, without blocking (shared with the supervisor). */
import path from 'node:path';
import { ARTIFACTS_DIR } from '@runboard/supervisor/protocol';
import { readRegularFileSync } from '@runboard/supervisor/regular-file';

export {
  NotRegularFile,
  openRegularFile,
  openRegularFileSync,
  readRegularFile,
  readRegularFileBytesSync,
  readRegularFileSync,
  readRegularFileText,
  rewriteInPlaceSync,
} from '@runboard/supervisor/regular-file';

/**
 * A file a run left in its artifacts folder (a reflect run's schema.json, an extraction's answer), read
 * by the host only when it is a regular file of at most `maxBytes`: the run chose what is there, and a
 * link to a file of the person's would otherwise be read, and its text could end up in a card that a
 * later run reads.
 */
export function readRunArtifactSync(logDir: string, name: string, maxBytes = 8 << 20): string {
  return readRegularFileSync(path.join(logDir, ARTIFACTS_DIR, name), { noFollow: true, maxBytes });
}
