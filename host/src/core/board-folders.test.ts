import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { workspaceValue } from './board-folders.ts';

describe('how a card names its workspace folder', () => {
  const project = path.resolve('/home/me/project');
  it('the project folder is left out, a folder inside it is relative, one outside absolute', () => {
    expect(workspaceValue(project, project)).toBeUndefined();
    expect(workspaceValue(project, path.join(project, 'ws', 'a'))).toBe('./ws/a');
    expect(workspaceValue(project, '/home/me/elsewhere')).toBe('/home/me/elsewhere');
    expect(workspaceValue(project, '/home/me/project-2')).toBe('/home/me/project-2');
  });
});
