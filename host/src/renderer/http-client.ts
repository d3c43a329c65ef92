/**
 * BoardApi over HTTP, for the browser shell (`runboard serve`), built from the board's method table:
 * each call is its route's request. The page opened with the printed URL came with a page token of its
 * own (server.ts); the page holds it (and keeps it in localStorage, which only this origin, port
 * included, reads: a reload, a link to a card, another tab of this board keep working; the server
 * forgets its page tokens when it stops, so what is stored is dead after that) and sends it on
 * every request: as `Authorization: Bearer`, or as `pt` on what the browser fetches by itself (images,
 * downloads, event streams). No cookie: the browser would send it to every port of 127.0.0.1.
 */
import type { BoardApi } from '../shared/board-api.ts';
import { boardMethods, buildCalls, fillPath, queryOf, urlOf } from '../shared/board-methods.ts';
import type { BoardDelta, RunStreamMessage } from '../shared/board-types.ts';

const STORED = 'runboard-page-token';
const OPEN_THE_URL = 'open the URL runboard serve printed (it has the token)';

/** The page's token: the one the page came with (kept), else the one kept by an earlier page. */
const PAGE_TOKEN: string | undefined = (() => {
  const el = document.getElementById('page-token');
  el?.remove();
  try {
    const given = el?.textContent ? (JSON.parse(el.textContent) as unknown) : undefined;
    if (typeof given === 'string') {
      localStorage.setItem(STORED, given);
      return given;
    }
    return localStorage.getItem(STORED) ?? undefined;
  } catch {
    return undefined;
  }
})();

/** `url` with the page token, for what the browser fetches by itself. */
function withToken(url: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}pt=${encodeURIComponent(PAGE_TOKEN ?? '')}`;
}

async function request(method: string, url: string, body?: unknown): Promise<unknown> {
  if (!PAGE_TOKEN) throw new Error(OPEN_THE_URL);
  const res = await fetch(url, {
    method,
    credentials: 'omit',
    headers: {
      authorization: `Bearer ${PAGE_TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const data = (await res.json().catch(() => ({}))) as { error?: string };
  if (!res.ok) throw new Error(data.error ?? `${method} ${url}: HTTP ${res.status}`);
  return data;
}

/** POSTs a file's bytes (an `upload` method), reporting progress; its JSON answer, or its error in words. */
function upload(
  url: string,
  file: File,
  onProgress?: (sent: number, total: number) => void,
): Promise<unknown> {
  if (!PAGE_TOKEN) return Promise.reject(new Error(OPEN_THE_URL));
  return new Promise((resolve, reject) => {
    // fetch() reports no upload progress; XMLHttpRequest does
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
    xhr.setRequestHeader('authorization', `Bearer ${PAGE_TOKEN}`);
    xhr.setRequestHeader('content-type', 'application/octet-stream');
    xhr.upload.onprogress = (e) => onProgress?.(e.loaded, e.total);
    xhr.onload = () => {
      let data: { error?: string } = {};
      try {
        data = JSON.parse(xhr.responseText) as typeof data;
      } catch {
        /* not JSON: the status says it */
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(data);
      else reject(new Error(data.error ?? `POST ${url}: HTTP ${xhr.status}`));
    };
    xhr.onerror = () =>
      reject(new Error(`the upload of ${file.name} broke off: is the board still running?`));
    xhr.send(file);
  });
}

export function httpApi(): BoardApi {
  const calls = buildCalls((name, params) => {
    const m = boardMethods[name];
    const { path, rest } = fillPath(m.path, params);
    return m.verb === 'GET' ? request('GET', path + queryOf(rest)) : request(m.verb, path, rest);
  });
  return {
    ...calls,
    onBoardChanged(cb) {
      const es = new EventSource(withToken(urlOf('boardEvents', {})));
      es.onmessage = (e: MessageEvent<string>) => {
        const m = JSON.parse(e.data) as { type: string } & Partial<BoardDelta>;
        cb(m.type === 'delta' ? (m as BoardDelta) : undefined);
      };
      // the browser reconnects by itself; refresh the board when it does
      es.onopen = () => cb();
      return () => es.close();
    },
    fileUrl: (runId, name) => withToken(urlOf('runFile', { runId, name })),
    liveUrl: (runId, n) => withToken(urlOf('liveFrame', { runId, n })),
    recordingFileUrl: (recordingId, name) => withToken(urlOf('recordingFile', { recordingId, name })),
    importVideoFile: (file, opts, onProgress) =>
      upload(urlOf('importVideo', { name: file.name, ...opts }), file, onProgress) as Promise<
        Awaited<ReturnType<BoardApi['importVideoFile']>>
      >,
    async exportRun(runId) {
      const a = document.createElement('a');
      a.href = withToken(urlOf('exportRun', { runId }));
      a.download = `run-${runId}.tar.gz`;
      document.body.append(a);
      a.click();
      a.remove();
    },
    streamRun(runId, cb: (m: RunStreamMessage) => void) {
      const es = new EventSource(withToken(urlOf('runStream', { runId })));
      let ended = false;
      es.onmessage = (e: MessageEvent<string>) => {
        const m = JSON.parse(e.data) as RunStreamMessage;
        if (m.type === 'end') {
          ended = true;
          es.close();
        }
        cb(m);
      };
      es.onerror = () => {
        if (ended) es.close();
      };
      return () => es.close();
    },
  };
}
