/**
 * BoardApi over HTTP, for the browser shell (`runboard serve`), built from the board's method table:
 * each call is its route's request. The page was opened with the launch token in its URL; the server
 * turned it into an HttpOnly cookie, so requests here carry it implicitly.
 */
import type { BoardApi } from '../shared/board-api.ts';
import { boardMethods, buildCalls, fillPath, queryOf, urlOf } from '../shared/board-methods.ts';
import type { BoardDelta, RunStreamMessage } from '../shared/board-types.ts';

async function request(method: string, url: string, body?: unknown): Promise<unknown> {
  const res = await fetch(url, {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const data = (await res.json().catch(() => ({}))) as { error?: string };
  if (!res.ok) throw new Error(data.error ?? `${method} ${url}: HTTP ${res.status}`);
  return data;
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
      const es = new EventSource(urlOf('boardEvents', {}));
      es.onmessage = (e: MessageEvent<string>) => {
        const m = JSON.parse(e.data) as { type: string } & Partial<BoardDelta>;
        cb(m.type === 'delta' ? (m as BoardDelta) : undefined);
      };
      // the browser reconnects by itself; refresh the board when it does
      es.onopen = () => cb();
      return () => es.close();
    },
    fileUrl: (runId, name) => urlOf('runFile', { runId, name }),
    liveUrl: (runId, n) => urlOf('liveFrame', { runId, n }),
    recordingFileUrl: (recordingId, name) => urlOf('recordingFile', { recordingId, name }),
    async exportRun(runId) {
      const a = document.createElement('a');
      a.href = urlOf('exportRun', { runId });
      a.download = `run-${runId}.tar.gz`;
      document.body.append(a);
      a.click();
      a.remove();
    },
    streamRun(runId, cb: (m: RunStreamMessage) => void) {
      const es = new EventSource(urlOf('runStream', { runId }));
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
