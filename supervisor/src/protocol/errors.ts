/**
 * Error codes of Runboard's JSON-RPC protocol, in one place. They sit outside JSON-RPC's reserved range
 * (-32768..-32000) so they never collide with transport errors such as InvalidParams (-32602).
 */
export const ErrorCodes = {
  /** The grant's signature does not verify and no grant with its id was ever issued here. */
  GrantForged: 1001,
  /** A grant this host issued, with fields changed after signing. */
  GrantTampered: 1002,
  /** The granted folder was replaced or removed (device/inode differ): the user must grant it again. */
  GrantStale: 1003,
  /** The workspace or a path of the run resolves outside the granted folder (`..`, symlink). */
  PathOutsideGrant: 1004,
  /** The grant is not a grant at all (wrong shape/version). */
  GrantMalformed: 1005,
  /** The granted folder is, holds or lies inside Runboard's state root or runtime dir (keys, sockets). */
  GrantCoversState: 1006,
  /** No run with that id is known to this supervisor. */
  RunNotFound: 1010,
  /** A frame larger than the receiver accepts. */
  MessageTooLarge: 1030,
  /** The peer is not allowed to call this (wrong run token, or a run process calling the host socket). */
  Unauthorized: 1040,
  /** The supervisor is shutting down and takes no new runs. */
  ShuttingDown: 1050,
  /** The run could not get its log directory (disk full, permissions). */
  LogDirFailed: 1060,
  /**
   * The request does not fit the run's (or the display's) state: the run is still going, has no worktree or
   * was already settled; a second computer-use run on the real display (`data`: DisplayBusy).
   */
  InvalidState: 1070,
  /**
   * A launch's `allow` names an ask that is not on record for an ended run of the same card, or one
   * that may not be allowed (Runboard's own state, the whole home folder): nothing was started.
   */
  AskRefused: 1080,
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** JSON-RPC's own codes that Runboard uses by name. */
export const JsonRpcCodes = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
} as const;
