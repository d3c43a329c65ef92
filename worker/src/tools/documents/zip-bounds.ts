// A DOCX or XLSX is a ZIP, and a 512 KB one can inflate to gigabytes (read_document grew past 1.5 GB on
// one): before the file reaches its library (mammoth, exceljs, both through JSZip), every entry the
// central directory lists is inflated here with a bound on its output (zlib's maxOutputLength), so a
// size field that lies is caught too, and the whole is refused past MAX_INFLATED_BYTES or MAX_ENTRIES.
// The library then inflates the same entries (the same bytes give the same output).
import { inflateRawSync } from 'node:zlib';
import { DocumentError } from './paths.ts';

/** The most a document's entries may hold together, inflated. */
export const MAX_INFLATED_BYTES = 256 << 20;
/** The most entries a document may have. */
export const MAX_ENTRIES = 10_000;

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

function refuse(name: string, why: string): DocumentError {
  return new DocumentError(`${name}: ${why}; read_document does not open it (a ZIP bomb or a broken file)`);
}

/** Refuses (DocumentError) a ZIP whose entries inflate past the bounds, or that cannot be walked. */
export function checkZipBounds(name: string, zip: Buffer): void {
  // The end of central directory record: in the last 64 KiB + 22 bytes (its comment is at most 64 KiB).
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--)
    if (zip.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  if (eocd < 0) throw refuse(name, 'not a ZIP file (no end of central directory)');
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  if (count === 0xffff || at === 0xffffffff)
    throw refuse(name, 'a ZIP64 archive, larger than any document read here');
  if (count > MAX_ENTRIES) throw refuse(name, `${count} entries, more than ${MAX_ENTRIES}`);
  let total = 0;
  for (let n = 0; n < count; n++) {
    if (at + 46 > zip.length || zip.readUInt32LE(at) !== CENTRAL)
      throw refuse(name, 'a broken central directory');
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const declared = zip.readUInt32LE(at + 24);
    const nameLen = zip.readUInt16LE(at + 28);
    const extraLen = zip.readUInt16LE(at + 30);
    const commentLen = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    const entry = zip.toString('utf8', at + 46, at + 46 + nameLen);
    at += 46 + nameLen + extraLen + commentLen;
    if (local + 30 > zip.length || zip.readUInt32LE(local) !== LOCAL)
      throw refuse(name, `a broken entry ${entry}`);
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    if (start + compressed > zip.length) throw refuse(name, `entry ${entry} runs past the end of the file`);
    const budget = MAX_INFLATED_BYTES - total;
    if (declared > budget)
      throw refuse(name, `its entries inflate to more than ${MAX_INFLATED_BYTES >> 20} MiB`);
    let size: number;
    if (method === 0) size = compressed;
    else if (method === 8) {
      try {
        // one byte more than the budget allows: output past it is the bound hit, not an error of the data
        size = inflateRawSync(zip.subarray(start, start + compressed), {
          maxOutputLength: budget + 1,
        }).length;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
          throw refuse(name, `its entries inflate to more than ${MAX_INFLATED_BYTES >> 20} MiB`);
        throw refuse(name, `entry ${entry} does not inflate (${(err as Error).message})`);
      }
    } else throw refuse(name, `entry ${entry} uses compression method ${method}, not stored or deflate`);
    if (size > budget) throw refuse(name, `its entries inflate to more than ${MAX_INFLATED_BYTES >> 20} MiB`);
    if (size !== declared)
      throw refuse(name, `entry ${entry} inflates to ${size} bytes, its header says ${declared}`);
    total += size;
  }
}
