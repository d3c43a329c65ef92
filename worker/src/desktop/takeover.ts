/**
 * Takeover on the real display: an Escape the person presses cancels the run; the agent's own
 * synthetic Escape (a desktop_action key) does not.
 *
 * How they are told apart on X11: XInput 2 raw key events carry the *source* device. Everything the
 * addon injects goes through XTest, whose events come from the server's XTest keyboard slave ("Virtual
 * core XTEST keyboard"); a person's key comes from a real keyboard slave (evdev/libinput, or "Xvfb
 * keyboard"). The addon's key watcher (`desktop.watchKeys`, native/src/linux/watcher_linux.cc) reports
 * each Escape with its source and whether that source is an XTest device. (XRecord cannot do this: it
 * sees XTest events as core events.) Only Escape is watched: the person's other keys never reach the
 * worker.
 *
 * The HUD (`desktop.hud`) is the addon's too: an override-redirect, click-through bar, hidden around each
 * screenshot so the model never sees it.
 */
import { desktop, type Hud, type KeyWatcher } from '@runboard/native';

export interface EscapeWatcher {
  /** Resolves when the watcher listens and the HUD is up (or rejects with why it cannot). */
  ready: Promise<void>;
  /** Unmaps the HUD (before a screenshot) / maps it again; resolve once the X server has done it. */
  hideHud(): Promise<void>;
  showHud(): Promise<void>;
  stop(): void;
}

export function watchEscape(
  onEscape: (by: 'person' | 'agent', device: string) => void,
  /** The HUD's text ('' for no HUD). */
  hudText = '',
  /** The watcher died after it started (the display went away). */
  onError: (err: Error) => void = () => undefined,
  /** A point of the screen the run acts on: the HUD goes on that monitor (default: the primary one). */
  hudAt?: [number, number],
): EscapeWatcher {
  let keys: KeyWatcher | undefined;
  let hud: Hud | undefined;
  let stopped = false;
  const stop = (): void => {
    stopped = true;
    keys?.stop();
    hud?.close();
  };
  const ready = (async () => {
    keys = await desktop.watchKeys((k) => onEscape(k.synthetic ? 'agent' : 'person', k.device), {
      keys: ['Escape'],
      onError,
    });
    if (hudText && !stopped) hud = await desktop.hud(hudText, { onError, ...(hudAt ? { at: hudAt } : {}) });
    if (stopped) stop(); // stopped while starting
  })();
  ready.catch(() => stop());
  return {
    ready,
    hideHud: async () => hud?.hide(),
    showHud: async () => hud?.show(),
    stop,
  };
}
