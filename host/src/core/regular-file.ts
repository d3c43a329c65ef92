/** Reading files a person can put anything in, without blocking (shared with the supervisor). */
export { NotRegularFile, readRegularFileSync } from '@runboard/supervisor/regular-file';
