/** A full disk said in words a person can act on; any other error as it is. */
export function diskError(err: unknown, dir: string): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== 'ENOSPC' && code !== 'EDQUOT') return err;
  return new Error(
    `nothing was changed: the disk holding ${dir} is full (${code}); free some space (\`runboard gc\` removes old runs) and try again`,
  );
}
