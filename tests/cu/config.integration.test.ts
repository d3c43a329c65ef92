/** The demo project's computer-use flow and card parse, and map onto a FlowSpec the supervisor accepts. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FlowSpec } from '@runboard/supervisor/protocol';
import { flowSpec } from '../../host/src/core/launch.ts';
import { loadCard, loadConfig, parseConfig } from '../../host/src/core/project.ts';
import { REPO } from '../helpers/harness.ts';

const project = path.join(REPO, 'project');

describe('computer-use flows in config.yaml', () => {
  it('the demo flow and card are valid, and the flow maps onto a valid FlowSpec', () => {
    const cfg = loadConfig(project);
    const spec = flowSpec('desktop', cfg.flows.desktop!, project);
    expect(FlowSpec.safeParse(spec).success).toBe(true);
    expect(spec).toMatchObject({
      runner: 'computer-use',
      prompt: path.join(REPO, 'prompts', 'execution_agent'),
      computerUse: { privateDisplay: true, app: ['gtk3-widget-factory'], maxSteps: 60 },
    });
    expect(loadCard(path.join(project, 'cards', 'desktop-widget-factory.md'), project).front.flow).toBe(
      'desktop',
    );
  });

  it('maxDuration becomes maxDurationMs; a real-display flow with cap > 1 is refused', () => {
    const ok = parseConfig(
      'c.yaml',
      'version: 1\nflows:\n  d: { runner: computer-use, cap: 1, computerUse: { maxDuration: 5m, region: [1920, 0, 1280, 1024] } }\n',
    );
    expect(flowSpec('d', ok.flows.d!, project).computerUse).toEqual({
      maxDurationMs: 300_000,
      region: [1920, 0, 1280, 1024],
    });
    expect(() =>
      parseConfig('c.yaml', 'version: 1\nflows:\n  d: { runner: computer-use, cap: 2 }\n'),
    ).toThrow(/cap is at most 1/);
  });

  it('a monitor by name or index maps through; region and monitor together are refused', () => {
    const ok = parseConfig(
      'c.yaml',
      'version: 1\nflows:\n  d: { runner: computer-use, computerUse: { monitor: DP-2 } }\n',
    );
    expect(flowSpec('d', ok.flows.d!, project).computerUse).toEqual({ monitor: 'DP-2' });
    const byIndex = parseConfig(
      'c.yaml',
      'version: 1\nflows:\n  d: { runner: computer-use, computerUse: { monitor: 1 } }\n',
    );
    expect(FlowSpec.safeParse(flowSpec('d', byIndex.flows.d!, project)).success).toBe(true);
    expect(() =>
      parseConfig(
        'c.yaml',
        'version: 1\nflows:\n  d: { runner: computer-use, computerUse: { monitor: 1, region: [0, 0, 10, 10] } }\n',
      ),
    ).toThrow(/region or monitor, not both/);
  });
});
