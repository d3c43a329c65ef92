/** The one reader of files a person or a run can put anything in lives in @runboard/native/regular-file. */
export {
  NotRegularFile,
  openRegularFile,
  openRegularFileSync,
  readRegularFile,
  readRegularFileBytesSync,
  readRegularFileSync,
  readRegularFileText,
  rewriteInPlaceSync,
  type RegularFileOptions,
} from '@runboard/native/regular-file';
