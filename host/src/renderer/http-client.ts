/**
 * BoardApi over HTTP, for the browser shell (`runboard serve`). The page was opened with the launch
 * token in its URL; the server turned it into an HttpOnly cookie, so requests here carry it implicitly.
 */
import type {
  BoardApi,
  BoardDelta,
  BoardView,
  CardDetail,
  Column,
  RunFiles,
  RunResult,
  RunStreamMessage,
  Settings,
  WorktreeDiff,
} from './api.ts';

async function request<T>(method: string, url: string, body?: unknown): Promise<T> {
  const res = await fetch(url, {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const data = (await res.json().catch(() => ({}))) as T & { error?: string };
  if (!res.ok) throw new Error(data.error ?? `${method} ${url}: HTTP ${res.status}`);
  return data;
}

const enc = encodeURIComponent;

export function httpApi(): BoardApi {
  return {
    board: () => request<BoardView>('GET', '/api/board'),
    onBoardChanged(cb) {
      let es: EventSource | undefined;
      let closed = false;
      const open = (): void => {
        es = new EventSource('/api/events');
        es.onmessage = (e: MessageEvent<string>) => {
          const m = JSON.parse(e.data) as { type: string } & Partial<BoardDelta>;
          cb(m.type === 'delta' ? (m as BoardDelta) : undefined);
        };
        // the browser reconnects by itself; refresh the board when it does
        es.onopen = () => cb();
      };
      open();
      return () => {
        closed = true;
        void closed;
        es?.close();
      };
    },
    card: (id) => request<CardDetail>('GET', `/api/cards/${enc(id)}`),
    move: (id, to: Column, index) => request('POST', `/api/cards/${enc(id)}/move`, { to, index }),
    cancel: (id) => request('POST', `/api/cards/${enc(id)}/cancel`, {}),
    answer: (id, answers, requeue) => request('POST', `/api/cards/${enc(id)}/answer`, { answers, requeue }),
    settings: () => request<Settings>('GET', '/api/settings'),
    saveSettings: (s) => request('PUT', '/api/settings', s),
    runFiles: (runId) => request<RunFiles>('GET', `/api/runs/${enc(runId)}/files`),
    runDiff: (runId) => request<WorktreeDiff>('GET', `/api/runs/${enc(runId)}/diff`),
    settleWorktree: (runId, how) => request<RunResult>('POST', `/api/runs/${enc(runId)}/${how}`, {}),
    fileUrl: (runId, name) => `/api/runs/${enc(runId)}/file?name=${enc(name)}`,
    liveUrl: (runId, n) => `/api/runs/${enc(runId)}/live?n=${n}`,
    async exportRun(runId) {
      const a = document.createElement('a');
      a.href = `/api/runs/${enc(runId)}/export`;
      a.download = `run-${runId}.tar.gz`;
      document.body.append(a);
      a.click();
      a.remove();
    },
    streamRun(runId, cb: (m: RunStreamMessage) => void) {
      const es = new EventSource(`/api/runs/${enc(runId)}/stream`);
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
