// Typed facade over the native addon. The platform implementation is picked in one place: the
// addon's build (binding.gyp); this facade does not care which platform it runs on.
import path from 'node:path';
import { binding, nativeBuildDir } from './binding.ts';

export interface SandboxSupport {
  /** Landlock ABI version the kernel offers; 0 when it has none. */
  landlockAbi: number;
  /** Why landlockAbi is 0, in words a user can act on ('' when it is not). */
  reason: string;
}

/** What the kernel offers for confining runs. Cheap: one syscall. */
export function sandboxSupport(): SandboxSupport {
  return binding().sandboxSupport();
}

/** Path of the run jail executable (see native/src/linux/jail.cc). */
export function jailPath(): string {
  return path.join(nativeBuildDir(), 'runboard-jail');
}

export interface PeerIdentity {
  pid: number;
  uid: number;
  /** `dev:ino` of the peer's user namespace. */
  userNs: string;
  /** Its user namespace was created inside ours (at any depth), as every run's is. */
  userNsBelowOwn: boolean;
  /** Its parent, grandparent, … up to pid 1, read while it was alive. */
  ancestors: number[];
}

/**
 * Who is at the other end of a connected Unix socket, held by a pidfd so that it cannot be raced
 * (SO_PEERPIDFD). Throws when the peer cannot be identified (it has exited, the kernel will not say).
 */
export function peerIdentity(fd: number): PeerIdentity {
  return binding().peerIdentity(fd);
}

/**
 * Takes the exclusive lock on the file `path` (made 0600 when missing) for the rest of this process's
 * life, without waiting: true when this process now holds it, false when another one does. The kernel
 * lets it go however the process ends, so a killed holder never leaves it taken. Throws when the file
 * cannot be opened or locked.
 */
export function holdProcessLock(path: string): boolean {
  return binding().holdProcessLock(path);
}

export { desktop, type Desktop } from './desktop/desktop.ts';
export * from './desktop/types.ts';
export {
  allElements,
  flatten,
  platformAction,
  platformRolesFor,
  shortAction,
  shortRole,
  toCompact,
  toVerbose,
  type CompactElement,
  type ShortRole,
} from './desktop/compact.ts';
export { matchSignature, type Candidate, type MatchResult, type Signature } from './desktop/match.ts';
export {
  Recording,
  RECORDING_LIMITS,
  BORDER_WIDTH,
  type RecordingOptions,
  type RecordingSummary,
} from './desktop/recording.ts';
export { hitTest } from './desktop/recording-elements.ts';
// The recording format's types and its list/delete, as native exported them before they moved.
export {
  deleteRecording,
  listRecordings,
  type ElementPathStep,
  type ManifestElement,
  type ManifestStep,
  type RecordingInfo,
  type StopReason,
} from '@runboard/project/recording';
export {
  ScreenVideo,
  VideoError,
  listMicrophones,
  listMicrophonesAsync,
  type MicChoice,
  type MicSource,
  type ScreenVideoOptions,
  type VideoResult,
} from './desktop/video.ts';
export { StepGrouper, keyName, type ButtonName, type GroupedStep, type StepAction } from './desktop/steps.ts';
export {
  NotRegularFile,
  openRegularFile,
  openRegularFileSync,
  readRegularFile,
  readRegularFileBytesSync,
  readRegularFileSync,
  readRegularFileText,
  type RegularFileOptions,
} from './regular-file.ts';
export { durationArgs, mediaInput, parseDuration, UnknownMediaType, VIDEO_DEMUXERS } from './media-input.ts';
