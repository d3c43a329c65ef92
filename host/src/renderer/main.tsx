/**
 * The renderer's entry: picks the BoardApi of its shell (the Electron preload bridge when present,
 * else HTTP for `runboard serve`) and renders the app.
 */
import { createRoot } from 'react-dom/client';
import type { BoardApi } from '../shared/board-api.ts';
import { App } from './App.tsx';
import { httpApi } from './http-client.ts';

declare global {
  interface Window {
    /** Set by the Electron preload bridge (host/src/electron/preload.ts). */
    runboard?: BoardApi;
  }
}

const api = window.runboard ?? httpApi();
// The token was in the URL only to get here; keep it out of the address bar and history. The hash stays:
// it names the card to open (`#card=<id>`), read by App after this.
if (location.search.includes('token=')) history.replaceState(null, '', location.pathname + location.hash);
createRoot(document.getElementById('root')!).render(<App api={api} />);
