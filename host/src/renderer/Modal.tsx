/**
 * The board's modal <dialog>: the browser keeps the keyboard inside, Escape closes the topmost one.
 * Its own module so that the card editor and the folder picker it opens both import it (no circle).
 */
import { useEffect, useId, useRef, type ReactNode } from 'react';

/** A modal dialog open while mounted; `onClose` on Escape or the close button. */
export function Modal({
  label,
  onClose,
  children,
  className,
}: {
  label: string;
  onClose: () => void;
  children: ReactNode;
  className?: string;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  // Escape closes it wherever the focus is (the browser's own cancel is not sent for every Escape)
  const close = useRef(onClose);
  close.current = onClose;
  useEffect(() => {
    const key = (e: KeyboardEvent): void => {
      if (e.key !== 'Escape' || e.defaultPrevented) return;
      // only the topmost dialog closes (a folder picker over the card editor)
      const dialogs = document.querySelectorAll('dialog[open]');
      if (dialogs[dialogs.length - 1] !== ref.current) return;
      e.preventDefault();
      close.current();
    };
    window.addEventListener('keydown', key, true);
    return () => window.removeEventListener('keydown', key, true);
  }, []);
  const headingId = useId();
  return (
    <dialog
      ref={ref}
      className={`modal ${className ?? ''}`}
      aria-labelledby={headingId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <div className="modal-head">
        <h2 id={headingId}>{label}</h2>
        <button type="button" className="close" onClick={onClose} aria-label={`Close ${label}`}>
          ✕
        </button>
      </div>
      {children}
    </dialog>
  );
}
