// The renderer runs in a browser (or Electron's sandboxed renderer): it sees the DOM, not Node.
/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
