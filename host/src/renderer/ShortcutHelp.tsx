/**
 * Help and the keyboard shortcuts: a dialog opened with the header's ? button or the ? key (outside a
 * text field), closed with Escape.
 */
import { useEffect, useRef } from 'react';

const SHORTCUTS: [string, string][] = [
  ['Tab / Shift+Tab', 'move between cards and buttons'],
  ['Enter', 'open the focused card in the inspector'],
  ['Space', 'pick up the focused card; arrows move it; Space drops it; Escape cancels'],
  ['Escape', 'close the inspector or a dialog; clear the search'],
  ['?', 'this help'],
];

export function ShortcutHelp({
  open,
  onOpen,
  onClose,
}: {
  open: boolean;
  onOpen: () => void;
  onClose: () => void;
}) {
  const closeButton = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const key = (e: KeyboardEvent): void => {
      const t = e.target as HTMLElement | null;
      const typing = !!t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
      if (e.key === '?' && !typing && !open) {
        e.preventDefault();
        onOpen();
      } else if (e.key === 'Escape' && open) {
        e.preventDefault();
        onClose();
      }
    };
    window.addEventListener('keydown', key);
    return () => window.removeEventListener('keydown', key);
  }, [open, onOpen, onClose]);
  useEffect(() => {
    if (open) closeButton.current?.focus();
  }, [open]);
  if (!open) return null;
  return (
    <div className="dialog-backdrop" onClick={onClose}>
      <div
        role="dialog"
        aria-modal="true"
        aria-label="Help"
        className="help-dialog"
        onClick={(e) => e.stopPropagation()}
      >
        <header>
          <h2>Help</h2>
          <button ref={closeButton} className="close" onClick={onClose} aria-label="Close help">
            ✕
          </button>
        </header>
        <p>
          Each card is a task in <code>cards/</code>. Put a card into <strong>Queued</strong> (drag it, or
          press <strong>Run</strong> in its inspector) and it runs in a sandbox that sees only its granted
          folder; its live log is in the inspector. Flows are set in <code>config.yaml</code>; keys, grants
          and the configuration are in <strong>Settings</strong>.
        </p>
        <h3>Keyboard</h3>
        <dl className="shortcuts">
          {SHORTCUTS.map(([k, what]) => (
            <div key={k}>
              <dt>
                <kbd>{k}</kbd>
              </dt>
              <dd>{what}</dd>
            </div>
          ))}
        </dl>
        <p className="muted">More: docs/user-guide.md in the Runboard folder.</p>
      </div>
    </div>
  );
}
