/**
 * Full disks for tests, made on purpose (DEVELOPERS.md: a point "between X and Y" held by a full disk):
 * a folder moved onto a small tmpfs of its own, and that filesystem filled to its last byte.
 */
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Fills the filesystem of `dir` to its last block: its free space allocated, then written to the end
 * in `bs`-byte blocks. Returns how to free it.
 */
export function fillDisk(dir: string, bs = 4096): () => void {
  const files = [path.join(dir, 'filler-1'), path.join(dir, 'filler-2')];
  const free = Number(
    execFileSync('df', ['--output=avail', '-B1', dir], { encoding: 'utf8' }).split('\n')[1],
  );
  try {
    if (free > 0) execFileSync('fallocate', ['-l', String(free), files[0]!], { stdio: 'ignore' });
  } catch {
    // refused past the free space: dd fills the rest
  }
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${files[1]}`, `bs=${bs}`], { stdio: 'ignore' });
  } catch {
    // ENOSPC: full, as wanted
  }
  return () => {
    for (const f of files) rmSync(f, { force: true });
  };
}

/** A folder on a disk of its own (`ownDisk`). */
export interface OwnDisk {
  /**
   * Fills the disk to its last byte, leaving `slack` bytes of room in the last page of each ledger log
   * (its appends then fit, or are cut short, as on the soak's disk), none anywhere else.
   */
  fill(slack?: number): void;
  /** Frees what `fill` took. */
  free(): void;
}

/**
 * Puts `dir` on a tmpfs of `size` of its own, with what it held (unmount it with `umount -l dir`).
 * `fill` writes in `bs`-byte blocks. The ledger logs padded are `dir/ledger`'s, or `dir`'s own when it
 * has no ledger folder (it is the ledger's).
 */
export function ownDisk(dir: string, size = '1m', bs = 4096): OwnDisk {
  const saved = mkdtempSync(path.join(os.tmpdir(), 'rb-ledger-'));
  // a stopped supervisor's socket may be left behind (it binds a new one when it starts)
  const filter = (src: string): boolean => !lstatSync(src).isSocket();
  cpSync(dir, saved, { recursive: true, filter });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir]);
  cpSync(saved, dir, { recursive: true, filter });
  rmSync(saved, { recursive: true, force: true });
  let free = (): void => undefined;
  return {
    fill(slack = 0) {
      // An append that fits in a file's last page takes no space: the logs end `slack` bytes before a
      // page boundary first (empty lines, which the ledger skips).
      const ledgers = existsSync(path.join(dir, 'ledger')) ? path.join(dir, 'ledger') : dir;
      for (const name of readdirSync(ledgers).filter((n) => n.endsWith('.log'))) {
        const size = statSync(path.join(ledgers, name)).size;
        const pad = (((4096 - slack - size) % 4096) + 4096) % 4096;
        if (pad) appendFileSync(path.join(ledgers, name), '\n'.repeat(pad));
      }
      free = fillDisk(dir, bs);
    },
    free: () => free(),
  };
}
