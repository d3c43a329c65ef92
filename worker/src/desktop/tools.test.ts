import { describe, expect, it } from 'vitest';
import { fromComputerAction } from '../models/messages.ts';
import { inferScale, uiAutomationGuard } from './tools.ts';

describe('terminal_exec guard', () => {
  it('refuses UI automation commands, wherever they sit in the line', () => {
    for (const c of [
      'xdotool click 1',
      '/usr/bin/xdotool key ctrl+s',
      'sh -c "wmctrl -a Firefox"',
      'python3 -c "import pyautogui"',
      'ls; ydotool type x',
    ])
      expect(uiAutomationGuard(c), c).not.toBeNull();
  });
  it('lets ordinary commands through', () => {
    for (const c of ['ls -la', 'git status', 'echo xdotools-are-fun-not', 'grep -r importer .', 'npm test'])
      expect(uiAutomationGuard(c), c).toBeNull();
  });
});

describe('Anthropic computer tool → desktop_action', () => {
  it('translates its actions', () => {
    expect(fromComputerAction({ action: 'left_click', coordinate: [10, 20] })).toEqual({
      action: 'left_click',
      x: 10,
      y: 20,
    });
    expect(fromComputerAction({ action: 'key', text: 'ctrl+s' })).toEqual({ action: 'key', keys: 'ctrl+s' });
    expect(
      fromComputerAction({ action: 'left_click_drag', start_coordinate: [1, 2], coordinate: [3, 4] }),
    ).toEqual({
      action: 'drag',
      x: 1,
      y: 2,
      to_x: 3,
      to_y: 4,
    });
    expect(
      fromComputerAction({ action: 'scroll', coordinate: [5, 6], scroll_direction: 'up', scroll_amount: 2 }),
    ).toEqual({
      action: 'scroll',
      x: 5,
      y: 6,
      direction: 'up',
      amount: 2,
    });
    expect(fromComputerAction({ action: 'wait', duration: 1 })).toEqual({ action: 'wait', seconds: 1 });
    expect(fromComputerAction({ action: 'triple_click' })).toEqual({ action: 'computer:triple_click' });
  });
});

describe('toolkit scale the addon could not read', () => {
  it('is the factor that makes the top element fill the window', () => {
    // GDK_SCALE=2 form: X window [80, 0, 962, 1113], AT-SPI panel in logical pixels.
    expect(inferScale([80, 0, 962, 1113], [52, 22, 456, 520])).toBe(2);
    expect(inferScale([80, 0, 962, 1113], [104, 44, 912, 1040])).toBe(1);
    expect(inferScale([0, 0, 500, 600], [0, 20, 496, 576])).toBe(1);
    expect(inferScale([0, 0, 500, 600], undefined)).toBe(1);
  });
});
