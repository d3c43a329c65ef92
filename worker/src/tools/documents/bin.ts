// Entry of dist/documents-mcp.cjs (scripts/bundle.mjs).
import { main } from './server.ts';

main(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`documents-mcp: ${(e as Error).message}\n`);
  process.exit(1);
});
