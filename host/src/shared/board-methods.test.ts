import { describe, expect, it } from 'vitest';
import { boardMethods, buildCalls, callNames, matchRoute, methodNames, urlOf } from './board-methods.ts';

const sample: Record<string, Record<string, unknown>> = {
  id: { id: 'card one/../x' },
  runId: { runId: '20250101-000000-abcdef' },
  how: { how: 'keep' },
};

/** Parameters that fill every `:name` of a route, with characters that need encoding. */
function paramsFor(path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [, name] of path.matchAll(/:(\w+)/g))
    Object.assign(out, sample[name!] ?? { [name!]: `v ${name}` });
  return out;
}

describe("the board's method table", () => {
  it('every route leads back to its own method, whatever its parameters hold', () => {
    for (const name of methodNames) {
      const m = boardMethods[name];
      const params = paramsFor(m.path);
      const url = new URL(urlOf(name, params as never), 'http://x');
      const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
      const route = matchRoute(m.verb, segments);
      expect(route?.name, name).toBe(name);
      for (const [k, v] of Object.entries(route!.pathParams)) expect(v).toBe(params[k]);
    }
  });

  it('no path is answered by another verb by accident, and unknown paths match nothing', () => {
    expect(matchRoute('DELETE', ['api', 'board'])).toBeUndefined();
    expect(matchRoute('GET', ['api', 'cards'])).toBeUndefined();
    expect(matchRoute('GET', ['api', 'cards', 'a', 'move'])).toBeUndefined();
    expect(matchRoute('POST', ['api', 'runs', 'r', 'keep'])?.pathParams).toEqual({ runId: 'r', how: 'keep' });
  });

  it('left-over parameters go to the query (GET) and the client sends each call under its name', async () => {
    expect(urlOf('liveFrame', { runId: 'r', n: 3 })).toBe('/api/runs/r/live?n=3');
    expect(urlOf('runFile', { runId: 'r', name: 'a b.png' })).toBe('/api/runs/r/file?name=a+b.png');
    const sent: [string, unknown][] = [];
    const calls = buildCalls(async (name, params) => void sent.push([name, params]));
    await calls.board();
    await calls.move({ id: 'a', to: 'done', index: 0 });
    expect(sent).toEqual([
      ['board', {}],
      ['move', { id: 'a', to: 'done', index: 0 }],
    ]);
    expect(Object.keys(calls).sort()).toEqual([...callNames].sort());
  });
});
