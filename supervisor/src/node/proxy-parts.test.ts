// The model proxy's parts pulled out of model-proxy.ts (issue 29): the per-runner route allow-list and
// the vision route's one request, decided without a listener.
import { describe, expect, it } from 'vitest';
import { apiRoutes, routeRefusal } from './proxy-routes.ts';
import { visionBody, visionRefusal } from './proxy-vision.ts';

describe('the route allow-list', () => {
  const codex = { allowed: apiRoutes('responses', '/v1'), runner: 'codex' };
  const gemini = { allowed: apiRoutes('gemini', ''), runner: 'replay' };

  it('lets through what the runner sends, below the client path', () => {
    expect(routeRefusal(codex, 'POST', '/v1/responses')).toBeNull();
    expect(routeRefusal(gemini, 'POST', '/v1beta/models/gemini-2.5-pro:generateContent')).toBeNull();
    expect(routeRefusal(gemini, 'GET', '/v1beta/files/abc-1')).toBeNull();
  });

  it('refuses any other method, path or model name, saying what the route makes', () => {
    expect(routeRefusal(codex, 'GET', '/v1/files')).toBe(
      "a codex run's proxy route makes only the requests its runner sends (POST /v1/responses), not GET /v1/files",
    );
    expect(routeRefusal(codex, 'POST', '/v1/responses/x')).not.toBeNull();
    expect(routeRefusal(gemini, 'POST', '/v1beta/models/..:generateContent')).not.toBeNull();
    expect(routeRefusal(gemini, 'GET', '/v1beta/files')).not.toBeNull();
    expect(routeRefusal({ allowed: [], runner: 'command' }, 'POST', '/v1/responses')).toBe(
      'a command run makes no model requests through its proxy route',
    );
  });
});

describe("the vision route's one request", () => {
  const limit = { model: 'glm-4v', path: '/chat/completions', modelInBody: true };

  it('is POST to its path with no query', () => {
    expect(visionRefusal(limit, 'POST', '/chat/completions', '')).toBeNull();
    expect(visionRefusal(limit, 'POST', '/chat/completions', '?x=1')).toMatch(
      /makes only the vision request/,
    );
    expect(visionRefusal(limit, 'GET', '/chat/completions', '')).not.toBeNull();
  });

  it("takes one JSON object naming the profile's model, forwarded as parsed", () => {
    const ok = visionBody(limit, Buffer.from('{"model":"glm-4v", "messages":[]}'));
    expect(ok).toEqual(Buffer.from('{"model":"glm-4v","messages":[]}'));
    expect(visionBody(limit, Buffer.from('{"model":"glm-5"}'))).toMatch(/asks model glm-4v only/);
    expect(visionBody(limit, Buffer.from('[1]'))).toBe("this run's vision route takes one JSON object");
    expect(visionBody(limit, Buffer.from('{'))).toBe("this run's vision route takes one JSON object");
    expect(visionBody({ ...limit, modelInBody: false }, Buffer.from('{"model":"x"}'))).not.toBeInstanceOf(
      Buffer,
    );
  });
});
